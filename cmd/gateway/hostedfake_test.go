package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeCLIEnv makes the test binary a stand-in for Claude Code run headless
// by the hosted leg: a script named claude (fakeClaude) sets it, since the
// leg hands its CLI no GATEWAY_* variable.
const fakeCLIEnv = "FAKE_HOSTED_CLI"

// fakeClaude writes the stand-in's script into a fresh directory and
// returns its path, for --claude-path.
func fakeClaude(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "claude")
	script := fmt.Sprintf("#!/bin/sh\n%s=1 exec '%s' \"$@\"\n", fakeCLIEnv, self)
	if err := os.WriteFile(p, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeHostedCLI speaks the stream-json frames of interop/FINDINGS-hosted.md:
// a system init, then for each user turn on stdin its echo (with the
// turn's uuid), an assistant message "echo: TEXT" and a result. It writes
// its arguments to .fake-args in its directory, so a test can see what it
// was started with.
func fakeHostedCLI(args []string) int {
	sid := "fake-session"
	for i, a := range args {
		if (a == "--session-id" || a == "--resume") && i+1 < len(args) {
			sid = args[i+1]
		}
	}
	if err := os.WriteFile(".fake-args", []byte(strings.Join(args, "\n")+"\n"), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out := json.NewEncoder(os.Stdout)
	emit := func(v map[string]any) { _ = out.Encode(v) }
	emit(map[string]any{"type": "system", "subtype": "init", "session_id": sid})
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; in.Scan(); {
		var m struct {
			Type    string `json:"type"`
			UUID    string `json:"uuid"`
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.Type != "user" {
			continue
		}
		text := m.Message.Content
		emit(map[string]any{"type": "user", "uuid": m.UUID, "session_id": sid, "message": map[string]any{"role": "user", "content": text}})
		reply := "echo: " + text
		emit(map[string]any{"type": "assistant", "session_id": sid, "message": map[string]any{"id": fmt.Sprintf("msg_%d", n), "role": "assistant",
			"content": []any{map[string]any{"type": "text", "text": reply}}, "stop_reason": "end_turn"}})
		emit(map[string]any{"type": "result", "subtype": "success", "session_id": sid, "result": reply, "is_error": false})
		n++
	}
	return 0
}
