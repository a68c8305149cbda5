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
			[]string{"ID  SESSION  TOOL  KIND      SUMMARY", "p1  s1       Bash  tool_use  ls"}},
		{"with hosts each row names its host", []message.PermissionRequest{bash, other}, false,
			[]string{"ID  HOST       SESSION  TOOL  KIND      SUMMARY", "p1  -          s1       Bash  tool_use  ls", "p2  build-box  s1       Bash  tool_use  ls"}},
		{"settled ones add their state", []message.PermissionRequest{other}, true,
			[]string{"ID  HOST       SESSION  TOOL  KIND      STATE    SUMMARY", "p2  build-box  s1       Bash  tool_use  pending  ls"}},
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

func TestEachPromptKindSuggestsTheVerbThatAnswersIt(t *testing.T) {
	question := message.PermissionRequest{ID: "pq", SessionID: "s1", Address: "bridge:s1", ToolName: "AskUserQuestion", State: message.PermissionPending,
		Questions: []message.Question{{Question: "Which?", Options: []string{"A", "B"}}}}
	plan := message.PermissionRequest{ID: "pp", SessionID: "s1", Address: "bridge:s1", ToolName: "ExitPlanMode", Input: []byte(`{"plan":"go"}`), State: message.PermissionPending}
	bash := message.PermissionRequest{ID: "pb", SessionID: "s1", Address: "bridge:s1", ToolName: "Bash", Input: []byte(`{"command":"npm test"}`), State: message.PermissionPending,
		Suggestions: []message.PermissionUpdate{{Type: "addRules", Behavior: "allow", Destination: "localSettings", Rules: []message.PermissionRule{{ToolName: "Bash", RuleContent: "npm test"}}}}}
	tests := []struct {
		name        string
		p           message.PermissionRequest
		watch, want []string
		not         string
	}{
		{"a question is answered, never allowed", question,
			[]string{`gateway answer pq "QUESTION=OPTION"`}, []string{`answer: gateway answer pq "1=A"`}, "gateway allow"},
		{"a plan is approved, optionally switching the mode", plan,
			[]string{"gateway allow pp [--mode acceptEdits]"}, []string{"plan approval pp", "allow: gateway allow pp [--mode acceptEdits]"}, "--suggestion"},
		{"a tool use lists the session's suggestions by number", bash,
			[]string{"gateway allow pb [--suggestion 1]"}, []string{"suggestion 1: addRules allow Bash(npm test) in localSettings", "allow: gateway allow pb [--suggestion 1]"}, "gateway answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			line := Line(message.Event{Type: message.EventPermission, Permission: &tc.p})
			var b strings.Builder
			Prompt(&b, tc.p)
			for _, w := range tc.watch {
				if !strings.Contains(line, w) {
					t.Errorf("watch line %q lacks %q", line, w)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("prompt\n%s\nlacks %q", b.String(), w)
				}
			}
			if strings.Contains(line, tc.not) || strings.Contains(b.String(), tc.not) {
				t.Errorf("%q suggested:\n%s\n%s", tc.not, line, b.String())
			}
		})
	}
}
