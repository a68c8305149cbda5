package eventfmt

import (
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/message"
)

func TestThePromptTableShowsHostsWhenPromptsHaveThem(t *testing.T) {
	bash := message.PermissionRequest{ID: "p1", SessionID: "s1", ToolName: "Bash", Input: []byte(`{"command":"ls"}`), State: message.PermissionPending}
	other := bash
	other.ID, other.Host = "p2", "build-box"
	tests := []struct {
		name      string
		ps        []message.PermissionRequest
		withState bool
		want      []string
	}{
		{"without federation there is no HOST column", []message.PermissionRequest{bash}, false,
			[]string{"ID  SESSION  TOOL  SUMMARY", "p1  s1       Bash  ls"}},
		{"with hosts each row names its host", []message.PermissionRequest{bash, other}, false,
			[]string{"ID  HOST       SESSION  TOOL  SUMMARY", "p1  -          s1       Bash  ls", "p2  build-box  s1       Bash  ls"}},
		{"settled ones add their state", []message.PermissionRequest{other}, true,
			[]string{"ID  HOST       SESSION  TOOL  STATE    SUMMARY", "p2  build-box  s1       Bash  pending  ls"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			Prompts(&b, tc.ps, tc.withState)
			got := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
			for i := range got {
				got[i] = strings.TrimRight(got[i], " ")
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
