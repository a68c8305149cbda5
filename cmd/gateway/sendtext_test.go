package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// Long texts do not fit in an argument: send reads them from stdin ("-")
// or a file, up to the API's cap on one message's text.
func TestSendReadsItsTextFromStdinOrAFileUpToTheCap(t *testing.T) {
	g := startBinary(t, t.TempDir())
	newFake(t, g, "work-08", message.ModePrompting)
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	long := strings.Repeat("the shell would refuse this argument ", 6000) // over 200 KiB
	tests := []struct {
		name, stdin string
		args        []string
		code        int
		body, says  string
	}{
		{"- sends stdin's text, not a dash", "from stdin\n", []string{"-"}, exitOK, "from stdin\n", ""},
		{"- sends a text longer than an argument may be", long, []string{"-"}, exitOK, long, ""},
		{"--text-file sends the file's text", "", []string{"--text-file", file("long.txt", long+"file")}, exitOK, long + "file", ""},
		{"--text-file at the cap is sent", "", []string{"--text-file", file("cap.txt", strings.Repeat("c", api.MaxText))}, exitOK, strings.Repeat("c", api.MaxText), ""},
		{"--text-file over the cap is refused, saying the cap", "", []string{"--text-file", file("over.txt", strings.Repeat("o", api.MaxText+1))}, exitError, "", "is over 524288 bytes (512 KiB), the most one message may carry"},
		{"stdin over the cap is refused, saying the cap", strings.Repeat("o", api.MaxText+1), []string{"-"}, exitError, "", "the text on stdin is over 524288 bytes"},
		{"an empty stdin is refused", "", []string{"-"}, exitError, "", "the text on stdin is empty"},
		{"a missing file is refused, naming it", "", []string{"--text-file", filepath.Join(dir, "none.txt")}, exitError, "", "none.txt"},
		{"TEXT and --text-file together are a usage error", "", []string{"hello", "--text-file", file("x.txt", "x")}, exitUsage, "", "not both"},
		{"no text at all is a usage error naming the ways to give it", "", nil, exitUsage, "", "- to read it from stdin, or --text-file FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"send", "--json", "--unpaced", "work-08"}, tt.args...)
			out, code, err := g.RunInput(t, strings.NewReader(tt.stdin), args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %v; stdout %.300s", code, tt.code, err, out)
			}
			if tt.code != exitOK {
				if !strings.Contains(out+errText(err), tt.says) {
					t.Fatalf("said %.300s / %.300s; want %q", out, errText(err), tt.says)
				}
				return
			}
			var o router.Outbound
			if err := json.Unmarshal([]byte(out), &o); err != nil {
				t.Fatalf("send --json printed %.300q: %v", out, err)
			}
			if o.Message.Body != tt.body || o.Status == message.StatusFailed {
				t.Fatalf("sent %d bytes (%.40q...) with status %s, want %d bytes (%.40q...)", len(o.Message.Body), o.Message.Body, o.Status, len(tt.body), tt.body)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
