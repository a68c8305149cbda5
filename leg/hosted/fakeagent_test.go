package hosted

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The tests run this test binary as a stand-in CLI speaking the
// stream-json frames of interop/FINDINGS-hosted.md: a script named claude
// (or qwen) execs it with FAKE_AGENT=1. It answers each user turn with
// "echo: TEXT"; a turn saying "tool" asks can_use_tool first; "die" exits
// 3; "junk" writes lines that do not decode. It keeps each session's turns
// in ./.fake-<session>.log, so --resume can say how many it remembers.
// As claude (-p) it writes its init once and echoes each turn; as qwen it
// writes an init at each turn's start and echoes nothing, as the real
// ones do (interop/FINDINGS-hosted.md).

func TestMain(m *testing.M) {
	if os.Getenv("FAKE_AGENT") == "1" {
		os.Exit(fakeAgent(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeCLI writes a script standing for agent into a fresh directory and
// returns its path.
func fakeCLI(t *testing.T, agent string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), agent)
	script := fmt.Sprintf("#!/bin/sh\nFAKE_AGENT=1 exec '%s' \"$@\"\n", self)
	if err := os.WriteFile(p, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

func fakeAgent(args []string) int {
	sid := "fake-session"
	resumed := false
	for i, a := range args {
		if (a == "--session-id" || a == "--resume") && i+1 < len(args) {
			sid, resumed = args[i+1], a == "--resume"
		}
	}
	logPath := ".fake-" + sid + ".log"
	remembered := 0
	if b, err := os.ReadFile(logPath); err == nil {
		remembered = strings.Count(string(b), "\n")
	}
	claude := slices.Contains(args, "-p")
	out := json.NewEncoder(os.Stdout)
	emit := func(v map[string]any) { _ = out.Encode(v) }
	initLine := map[string]any{"type": "system", "subtype": "init", "session_id": sid, "args": args, "resumed": resumed,
		"remembered": remembered, "env": os.Environ()}
	if claude {
		emit(initLine)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 16<<20)
	n := 0
	for in.Scan() {
		var m struct {
			Type      string `json:"type"`
			UUID      string `json:"uuid"`
			RequestID string `json:"request_id"`
			Message   struct {
				Content string `json:"content"`
			} `json:"message"`
			Request map[string]any `json:"request"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		switch m.Type {
		case "control_request":
			if m.Request["subtype"] == "set_model" && m.Request["model"] == "no-such-model" {
				emit(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "error", "request_id": m.RequestID, "error": "unknown model"}})
				continue
			}
			emit(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": m.RequestID, "response": map[string]any{}}})
		case "user":
			text := m.Message.Content
			f, _ := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			fmt.Fprintln(f, strings.ReplaceAll(text, "\n", " "))
			f.Close()
			if claude {
				emit(map[string]any{"type": "user", "uuid": m.UUID, "session_id": sid, "message": map[string]any{"role": "user", "content": text}})
			} else {
				emit(initLine)
			}
			n++
			reply := "echo: " + text
			switch text {
			case "die":
				return 3
			case "hang":
				time.Sleep(time.Hour) // reads nothing more
			case "ask":
				rid := fmt.Sprintf("req-%d", n)
				emit(map[string]any{"type": "control_request", "request_id": rid, "request": map[string]any{
					"subtype": "can_use_tool", "tool_name": "AskUserQuestion", "tool_use_id": "toolu_" + rid, "input": map[string]any{
						"questions": []any{map[string]any{"question": "Which approach?", "header": "Approach", "multiSelect": false,
							"options": []any{map[string]any{"label": "Small", "description": "a small fix"}, map[string]any{"label": "Big", "description": "a rewrite"}}}}}}})
				reply = "the question was " + awaitAnswer(in, rid)
			case "junk":
				for range 10 {
					fmt.Println("not json {")
				}
			case "history":
				reply = fmt.Sprintf("I remember %d turns", remembered+n-1)
			case "tool":
				rid := fmt.Sprintf("req-%d", n)
				emit(map[string]any{"type": "control_request", "request_id": rid, "request": map[string]any{
					"subtype": "can_use_tool", "tool_name": "Bash", "input": map[string]any{"command": "make deploy"}, "tool_use_id": "toolu_" + rid,
					"permission_suggestions": []any{map[string]any{"type": "addRules", "behavior": "allow", "destination": "localSettings",
						"rules": []any{map[string]any{"toolName": "Bash", "ruleContent": "make deploy"}}}}}})
				reply = "the tool was " + awaitAnswer(in, rid)
			}
			emit(map[string]any{"type": "assistant", "session_id": sid, "message": map[string]any{"id": fmt.Sprintf("msg_%d", n), "role": "assistant",
				"content": []any{map[string]any{"type": "text", "text": reply}}, "stop_reason": "end_turn"}})
			emit(map[string]any{"type": "result", "subtype": "success", "session_id": sid, "result": reply, "is_error": false})
		}
	}
	return 0
}

// awaitAnswer reads stdin until the control_response to rid and says what
// it decided.
func awaitAnswer(in *bufio.Scanner, rid string) string {
	for in.Scan() {
		var m struct {
			Type     string `json:"type"`
			Response struct {
				RequestID string `json:"request_id"`
				Response  struct {
					Behavior     string          `json:"behavior"`
					Message      string          `json:"message"`
					UpdatedInput json.RawMessage `json:"updatedInput"`
					Updates      []any           `json:"updatedPermissions"`
				} `json:"response"`
			} `json:"response"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.Type != "control_response" || m.Response.RequestID != rid {
			continue
		}
		d := m.Response.Response
		parts := []string{d.Behavior}
		if d.Message != "" {
			parts = append(parts, d.Message)
		}
		if len(d.Updates) > 0 {
			parts = append(parts, "always")
		}
		return strings.Join(slices.Clip(parts), " ")
	}
	return "never answered"
}
