package fakecloud

import (
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/testkit/clock"
)

func postEvent(t *testing.T, s *Server, id, event string) {
	t.Helper()
	if resp := do(t, headers(), "POST", s.URL()+"/v1/sessions/"+id+"/events", `{"events":[`+event+`]}`, nil); resp.StatusCode != 200 {
		t.Fatalf("post %s: %d %s", event, resp.StatusCode, resp.Header.Get("X-Test-Body"))
	}
}

func userEvent(text string) string {
	return `{"type":"user","message":{"role":"user","content":"` + text + `"}}`
}

func answer(rid, response string) string {
	return `{"type":"control_response","response":{"subtype":"success","request_id":"` + rid + `","response":` + response + `}}`
}

func isPrompt(m wire.Message) bool {
	return m.Kind == wire.KindControlRequest && m.ControlRequest.Subtype == wire.SubtypeCanUseTool
}

func TestTheEchoWorker(t *testing.T) {
	s := Start(t, Options{Token: token, SessionKey: "sk-abc", OrgUUID: org, Echo: true})
	tests := []struct {
		name string
		text string
		tool string // the prompt expected first; "" for none
		// reply is posted in answer to the prompt; it gets the prompt's request_id.
		reply       func(rid string) string
		wantSubtype string
		want        string // the result text
		toolResult  string // a substring of the tool_result event, if one is expected
	}{
		{"a user message is echoed in a streamed turn", "hello there", "", nil, "success", "echo: hello there", ""},
		{"ask raises an AskUserQuestion prompt and replies with the selections", "ask Proceed?", "AskUserQuestion",
			func(rid string) string {
				return answer(rid, `{"behavior":"allow","updatedInput":{"answers":{"Proceed?":"Yes","Which features?":["Logging","Metrics"]}}}`)
			}, "success", "answers: Proceed?=Yes; Which features?=Logging, Metrics", `"answers":{"Proceed?":"Yes"`},
		{"bash raises a Bash prompt and replies ran on allow", "bash ls -la", "Bash",
			func(rid string) string { return answer(rid, `{"behavior":"allow"}`) }, "success", "ran: ls -la", `"is_error":false`},
		{"an allow with updated input runs the updated command", "bash ls", "Bash",
			func(rid string) string {
				return answer(rid, `{"behavior":"allow","updatedInput":{"command":"ls -l /tmp"}}`)
			}, "success", "ran: ls -l /tmp", ""},
		{"bash replies denied with the message on deny", "bash rm -rf /", "Bash",
			func(rid string) string { return answer(rid, `{"behavior":"deny","message":"not now"}`) }, "success", "denied: not now", `"is_error":true`},
		{"an error answer counts as a denial", "bash rm", "Bash",
			func(rid string) string {
				return `{"type":"control_response","response":{"subtype":"error","request_id":"` + rid + `","error":"no UI"}}`
			}, "success", "denied: no UI", ""},
		{"plan raises ExitPlanMode and replies plan approved", "plan", "ExitPlanMode",
			func(rid string) string { return answer(rid, `{"behavior":"allow"}`) }, "success", "plan approved", ""},
		{"an interrupt while a prompt waits withdraws it and ends the turn", "bash sleep 100", "Bash",
			func(string) string {
				return `{"type":"control_request","request_id":"int-1","request":{"subtype":"interrupt"}}`
			}, "error_during_execution", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := s.CreateSession("echo")
			c := dial(t, s, id, false)
			postEvent(t, s, id, userEvent(tc.text))
			var msgs []wire.Message
			if tc.tool != "" {
				msgs = until(t, c, isPrompt)
				p := msgs[len(msgs)-1].ControlRequest
				if p.ToolName != tc.tool {
					t.Fatalf("prompt for %s, want %s", p.ToolName, tc.tool)
				}
				if tc.tool == "AskUserQuestion" {
					qs, _ := p.Questions()
					if len(qs) != 2 || qs[0].Question != "Proceed?" || !qs[1].MultiSelect {
						t.Fatalf("questions %+v", qs)
					}
				}
				postEvent(t, s, id, tc.reply(p.RequestID))
			}
			rest := until(t, c, isResult)
			res := rest[len(rest)-1].Result
			if res.Subtype != tc.wantSubtype || res.Result != tc.want || res.IsError != (tc.wantSubtype != "success") {
				t.Fatalf("result %+v, want %s %q", res, tc.wantSubtype, tc.want)
			}
			if tc.wantSubtype == "success" {
				if text, _ := checkTurn(t, rest); text != tc.want {
					t.Fatalf("streamed %q, want %q", text, tc.want)
				}
			}
			if tc.toolResult != "" {
				found := false
				for _, m := range rest {
					if m.Kind == wire.KindUser && len(m.User.Content.Blocks) == 1 && m.User.Content.Blocks[0].Kind == wire.BlockToolResult {
						found = strings.Contains(string(m.Raw), tc.toolResult)
					}
				}
				if !found {
					t.Fatalf("no tool_result with %s in %d messages", tc.toolResult, len(rest))
				}
			}
			if tc.wantSubtype == "error_during_execution" {
				var acked, cancelled bool
				for _, m := range rest {
					acked = acked || m.Kind == wire.KindControlResponse && m.ControlResponse.RequestID == "int-1"
					cancelled = cancelled || m.Kind == wire.KindControlCancelRequest
				}
				if !acked || !cancelled || len(s.Permissions(id)) != 0 {
					t.Fatalf("acked %v cancelled %v pending %+v", acked, cancelled, s.Permissions(id))
				}
			}
		})
	}
	t.Run("set_model is answered and changes the model of the next turn", func(t *testing.T) {
		id := s.CreateSession("model")
		c := dial(t, s, id, false)
		postEvent(t, s, id, `{"type":"control_request","request_id":"m-1","request":{"subtype":"set_model","model":"claude-opus-4-6"}}`)
		postEvent(t, s, id, `{"type":"control_request","request_id":"p-1","request":{"subtype":"set_permission_mode","mode":"acceptEdits"}}`)
		for _, rid := range []string{"m-1", "p-1"} {
			msgs := until(t, c, func(m wire.Message) bool { return m.Kind == wire.KindControlResponse })
			if r := msgs[len(msgs)-1].ControlResponse; r.RequestID != rid || r.Subtype != "success" {
				t.Fatalf("answer %+v, want one for %s", r, rid)
			}
		}
		postEvent(t, s, id, userEvent("hi"))
		if _, model := checkTurn(t, until(t, c, isResult)); model != "claude-opus-4-6" {
			t.Fatalf("model %q", model)
		}
	})
	t.Run("a prompt withdrawn with CancelPrompt ends the turn", func(t *testing.T) {
		id := s.CreateSession("withdrawn")
		c := dial(t, s, id, false)
		postEvent(t, s, id, userEvent("plan"))
		msgs := until(t, c, isPrompt)
		if err := s.CancelPrompt(id, msgs[len(msgs)-1].ControlRequest.RequestID); err != nil {
			t.Fatal(err)
		}
		rest := until(t, c, isResult)
		if r := rest[len(rest)-1].Result; r.Subtype != "error_during_execution" {
			t.Fatalf("result %+v", r)
		}
	})
	t.Run("messages sent during a turn are answered after it, in order", func(t *testing.T) {
		id := s.CreateSession("queue")
		c := dial(t, s, id, false)
		postEvent(t, s, id, userEvent("bash ls"))
		msgs := until(t, c, isPrompt)
		postEvent(t, s, id, userEvent("second"))
		postEvent(t, s, id, answer(msgs[len(msgs)-1].ControlRequest.RequestID, `{"behavior":"allow"}`))
		for _, want := range []string{"ran: ls", "echo: second"} {
			rest := until(t, c, isResult)
			if r := rest[len(rest)-1].Result; r.Result != want {
				t.Fatalf("result %q, want %q", r.Result, want)
			}
		}
	})
}

func TestAnInterruptEndsAPacedTurnMidStream(t *testing.T) {
	clk := clock.NewFakeClock(time.Time{})
	s := Start(t, Options{Token: token, SessionKey: "sk-abc", OrgUUID: org, Echo: true, EchoPace: time.Second, Clock: clk, KeepAlive: -1})
	id := s.CreateSession("paced")
	c := dial(t, s, id, false)
	postEvent(t, s, id, userEvent("a long answer"))
	msgs := until(t, c, func(m wire.Message) bool { return m.Kind == wire.KindAssistant })
	if b := msgs[len(msgs)-1].Assistant.Content.Blocks; b[0].Kind != wire.BlockThinking {
		t.Fatalf("first copy %+v", b)
	}
	// The worker now waits a second of the fake clock, which never passes.
	postEvent(t, s, id, `{"type":"control_request","request_id":"int-2","request":{"subtype":"interrupt"}}`)
	rest := until(t, c, isResult)
	for _, m := range rest {
		if m.Kind == wire.KindAssistant {
			t.Fatalf("a copy was streamed after the interrupt: %s", m.Raw)
		}
	}
	if r := rest[len(rest)-1].Result; r.Subtype != "error_during_execution" || !r.IsError {
		t.Fatalf("result %+v", r)
	}
}

func TestWithoutEchoNoWorkerRuns(t *testing.T) {
	s := start(t)
	id := s.CreateSession("quiet")
	postEvent(t, s, id, userEvent("hello"))
	s.mu.Lock()
	w := s.sessions[id].worker
	s.mu.Unlock()
	if w != nil {
		t.Fatal("a worker started without Echo")
	}
}
