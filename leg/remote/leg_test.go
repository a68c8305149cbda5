package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
)

// stubAPI records posts; it never touches the network.
type stubAPI struct {
	sessions []RemoteSession
	posts    []json.RawMessage
	postErr  error
	history  []json.RawMessage // served two at a time, or page
	page     int
	code     []json.RawMessage     // v2 envelopes, sequence_num = index+1, served two at a time
	onPost   func(json.RawMessage) // called with each event posted, on the poster's goroutine
}

func (s *stubAPI) EventsAfter(_ context.Context, _ string, after string) ([]json.RawMessage, bool, error) {
	start := 0
	if after != "" {
		start = -1
		for i, e := range s.history {
			var v struct{ UUID string }
			_ = json.Unmarshal(e, &v)
			if v.UUID == after {
				start = i + 1
			}
		}
		if start < 0 {
			return nil, false, errors.New("unknown after_id")
		}
	}
	page := s.page
	if page == 0 {
		page = 2
	}
	end := min(start+page, len(s.history))
	return s.history[start:end], end < len(s.history), nil
}
func (s *stubAPI) CodeEventsAfter(_ context.Context, _ string, after uint64) ([]json.RawMessage, bool, error) {
	start := min(int(after), len(s.code))
	end := min(start+2, len(s.code))
	return s.code[start:end], end < len(s.code), nil
}
func (s *stubAPI) ListSessions(context.Context) ([]RemoteSession, error) { return s.sessions, nil }
func (s *stubAPI) Post(_ context.Context, _ string, evs ...json.RawMessage) error {
	if s.postErr != nil {
		return s.postErr
	}
	s.posts = append(s.posts, evs...)
	if s.onPost != nil {
		for _, ev := range evs {
			s.onPost(ev)
		}
	}
	return nil
}
func (s *stubAPI) StreamHeader(context.Context) (http.Header, error) { return http.Header{}, nil }

func newTestLeg(t *testing.T, api *stubAPI, follow ...string) *Leg {
	t.Helper()
	l, err := NewLeg(LegConfig{API: api, BaseURL: "http://127.0.0.1:1", Follow: follow,
		Now: func() time.Time { return time.Unix(1700000000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func decodeT(t *testing.T, line string) wire.Message {
	t.Helper()
	m, err := wire.Decode([]byte(line))
	if err != nil {
		t.Fatalf("Decode(%s): %v", line, err)
	}
	return m
}

const askPrompt = `{"type":"control_request","request_id":"req-1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","tool_use_id":"toolu_1","description":"asks","input":{"questions":[{"question":"Which approach?","header":"Approach","multiSelect":false,"options":[{"label":"A"},{"label":"B"}]},{"question":"Which features?","header":"Features","multiSelect":true,"options":[{"label":"Logging"},{"label":"Metrics"}]}]}}}`

func TestNewLegRefusesBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  LegConfig
		want string
	}{
		{"a leg without an API client is refused", LegConfig{BaseURL: "http://x"}, "no API client"},
		{"a leg without a base URL is refused", LegConfig{API: &stubAPI{}}, "no base URL"},
		{"an unknown transport is refused", LegConfig{API: &stubAPI{}, BaseURL: "http://x", Transport: "grpc"}, "unknown transport"},
		{"a follow id that cannot be a session id is refused", LegConfig{API: &stubAPI{}, BaseURL: "http://x", Follow: []string{"../etc"}}, "not a session id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewLeg(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewLeg() error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestLegSessions(t *testing.T) {
	api := &stubAPI{sessions: []RemoteSession{
		{ID: "session_01a", Title: "fix the build", Status: "active"},
		{ID: "session_01b", Title: "old", Status: "archived"},
	}}
	tests := []struct {
		name   string
		follow []string
		want   []string // addresses
	}{
		{"following all lists every session", []string{"all"}, []string{"bridge:session_01a", "bridge:session_01b"}},
		{"following one lists only it", []string{"session_01a"}, []string{"bridge:session_01a"}},
		{"a followed id the list lacks is still listed", []string{"session_01z"}, []string{"bridge:session_01z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newTestLeg(t, api, tt.follow...)
			ss, err := l.Sessions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range ss {
				got = append(got, s.Address)
				if s.Protocol != message.ProtocolRemote || s.Ref != addressing.Ref(s.SessionID) {
					t.Errorf("session %+v: want protocol remote and ref of its id", s)
				}
				if s.Status == "archived" && s.Reachable {
					t.Errorf("archived session %s is listed reachable", s.Address)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("addresses = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLegSendPostsAUserEventWithAStableUUID(t *testing.T) {
	api := &stubAPI{}
	l := newTestLeg(t, api)
	m := message.Message{ID: "msg-7", To: "bridge:session_01a", Body: "hello"}
	for range 2 {
		rc, err := l.Send(context.Background(), m)
		if err != nil || rc.Status != message.StatusSent {
			t.Fatalf("Send = %+v, %v; want sent", rc, err)
		}
	}
	var a, b map[string]any
	_ = json.Unmarshal(api.posts[0], &a)
	_ = json.Unmarshal(api.posts[1], &b)
	if a["uuid"] != b["uuid"] || a["uuid"] != EventUUID("msg-7") {
		t.Errorf("uuids = %v, %v; want both %s", a["uuid"], b["uuid"], EventUUID("msg-7"))
	}
	if a["type"] != "user" || a["message"].(map[string]any)["content"] != "hello" || a["session_id"] != "session_01a" {
		t.Errorf("posted %s; want a user event with the body", api.posts[0])
	}

	t.Run("the echo of the posted event on the stream is a delivered receipt", func(t *testing.T) {
		f := &follow{prompts: newPrompts(), assistant: map[string]wire.Assistant{}}
		line := `{"type":"user","uuid":"` + EventUUID("msg-7") + `","message":{"role":"user","content":"hello"}}`
		evs := l.translate("session_01a", f, stream.Update{Message: decodeT(t, line)})
		if len(evs) != 2 || evs[1].Receipt == nil || evs[1].Receipt.Status != message.StatusDelivered || evs[1].Receipt.MsgID != "msg-7" {
			t.Fatalf("events = %+v; want the remote event and a delivered receipt for msg-7", evs)
		}
		if evs := l.translate("session_01a", f, stream.Update{Message: decodeT(t, line)}); len(evs) != 1 {
			t.Errorf("a second echo gave %d events, want the remote event only", len(evs))
		}
	})

	t.Run("a post the server refuses is a failed receipt", func(t *testing.T) {
		api.postErr = errors.New("403 permission_error")
		rc, err := l.Send(context.Background(), message.Message{ID: "msg-8", To: "bridge:session_01a", Body: "x"})
		if !errors.Is(err, api.postErr) || rc.Status != message.StatusFailed || !strings.Contains(rc.Reason, "403") {
			t.Errorf("Send = %+v, %v; want failed with the reason", rc, err)
		}
		api.postErr = nil
	})

	t.Run("a target that is not a bridge address is an error", func(t *testing.T) {
		if _, err := l.Send(context.Background(), message.Message{ID: "m", To: "uds:/tmp/x.sock"}); err == nil {
			t.Error("Send to a uds address succeeded")
		}
	})
}

func TestLegTranslate(t *testing.T) {
	l := newTestLeg(t, &stubAPI{})
	f := &follow{prompts: newPrompts(), assistant: map[string]wire.Assistant{}}
	tr := func(line string) []message.Event {
		return l.translate("session_01a", f, stream.Update{Message: decodeT(t, line)})
	}

	t.Run("keep-alives are not events", func(t *testing.T) {
		if evs := tr(`{"type":"keep_alive"}`); len(evs) != 0 {
			t.Errorf("got %d events", len(evs))
		}
	})
	t.Run("streamed assistant copies merge into the text so far, final on stop_reason", func(t *testing.T) {
		evs := tr(`{"type":"assistant","uuid":"e1","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"Hel"}],"stop_reason":null}}`)
		if r := evs[0].Remote; r.Text != "Hel" || r.Final || r.MessageID != "msg_1" {
			t.Errorf("first copy = %+v", r)
		}
		evs = tr(`{"type":"assistant","uuid":"e2","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"Hello"}],"stop_reason":"end_turn"}}`)
		if r := evs[0].Remote; r.Text != "Hello" || !r.Final || r.Address != "bridge:session_01a" {
			t.Errorf("final copy = %+v", r)
		}
	})
	t.Run("a result is final with its text", func(t *testing.T) {
		evs := tr(`{"type":"result","subtype":"success","result":"done","is_error":false}`)
		if r := evs[0].Remote; r.Kind != "result" || r.Text != "done" || !r.Final {
			t.Errorf("result = %+v", r)
		}
	})
	t.Run("can_use_tool becomes a pending permission request with its questions", func(t *testing.T) {
		evs := tr(askPrompt)
		if len(evs) != 2 || evs[1].Permission == nil {
			t.Fatalf("events = %+v", evs)
		}
		p := evs[1].Permission
		if p.State != message.PermissionPending || p.RequestID != "req-1" || p.ToolName != "AskUserQuestion" ||
			p.ToolUseID != "toolu_1" || len(p.Questions) != 2 || !p.Questions[1].MultiSelect || p.Questions[1].Options[1] != "Metrics" {
			t.Errorf("permission = %+v", p)
		}
	})
	t.Run("control_cancel_request withdraws the prompt it names", func(t *testing.T) {
		evs := tr(`{"type":"control_cancel_request","request_id":"req-1"}`)
		if len(evs) != 2 || evs[1].Permission.State != message.PermissionCancelled || evs[1].Permission.ToolName != "AskUserQuestion" {
			t.Fatalf("events = %+v", evs)
		}
		if n := f.prompts.Len(); n != 0 {
			t.Errorf("%d prompts left", n)
		}
	})
	t.Run("an answer given elsewhere settles the prompt as answered", func(t *testing.T) {
		tr(strings.Replace(askPrompt, "req-1", "req-2", 1))
		evs := tr(`{"type":"control_response","uuid":"not-ours","response":{"subtype":"success","request_id":"req-2","response":{"behavior":"deny","message":"no"}}}`)
		if len(evs) != 2 || evs[1].Permission == nil {
			t.Fatalf("events = %+v", evs)
		}
		if p := evs[1].Permission; p.State != message.PermissionAnswered || p.Answer.By != "remote" || p.Answer.Behavior != "deny" || p.ToolName != "AskUserQuestion" {
			t.Errorf("permission = %+v", p)
		}
	})
	t.Run("the echo of the gateway's own answer is left to the router", func(t *testing.T) {
		tr(strings.Replace(askPrompt, "req-1", "req-3", 1))
		evs := tr(`{"type":"control_response","uuid":"` + answerUUID("session_01a", "req-3") + `","response":{"subtype":"success","request_id":"req-3","response":{"behavior":"allow"}}}`)
		if len(evs) != 1 {
			t.Errorf("events = %+v, want the remote event only", evs)
		}
	})
	t.Run("an unknown type is kept raw", func(t *testing.T) {
		evs := tr(`{"type":"brand_new","x":1}`)
		if r := evs[0].Remote; r.Kind != "brand_new" || !strings.Contains(string(r.Raw), `"x":1`) {
			t.Errorf("remote = %+v", r)
		}
	})
}

func TestAnswerEvent(t *testing.T) {
	ask := decodeT(t, askPrompt)
	askReq := permission("session_01a", "bridge:session_01a", ask.ControlRequest, time.Now())
	bash := message.PermissionRequest{SessionID: "s", RequestID: "r2", ToolName: "Bash", ToolUseID: "toolu_2", Input: json.RawMessage(`{"command":"go test"}`)}
	tests := []struct {
		name    string
		req     message.PermissionRequest
		a       message.PermissionAnswer
		want    map[string]any // paths into response.response
		wantErr string
	}{
		{"an allow echoes the tool input and the tool use id", bash, message.PermissionAnswer{Behavior: "allow"},
			map[string]any{"behavior": "allow", "toolUseID": "toolu_2", "updatedInput.command": "go test"}, ""},
		{"an allow with a new input sends that input", bash, message.PermissionAnswer{Behavior: "allow", UpdatedInput: json.RawMessage(`{"command":"go vet"}`)},
			map[string]any{"updatedInput.command": "go vet"}, ""},
		{"a deny carries its message and no input", bash, message.PermissionAnswer{Behavior: "deny", Message: "not now"},
			map[string]any{"behavior": "deny", "message": "not now", "updatedInput": nil}, ""},
		{"rules go out as one addRules update with the behavior", bash, message.PermissionAnswer{Behavior: "allow", Rules: []message.PermissionRule{{ToolName: "Bash", RuleContent: "go test"}}},
			map[string]any{"updatedPermissions.0.type": "addRules", "updatedPermissions.0.destination": "localSettings",
				"updatedPermissions.0.behavior": "allow", "updatedPermissions.0.rules.0.toolName": "Bash", "updatedPermissions.0.rules.0.ruleContent": "go test"}, ""},
		{"answers are a string for single-select and a list for multi-select", askReq,
			message.PermissionAnswer{Behavior: "allow", Answers: map[string][]string{"Which approach?": {"A"}, "Which features?": {"Logging", "Metrics"}}},
			map[string]any{"updatedInput.answers.Which approach?": "A", "updatedInput.answers.Which features?.1": "Metrics",
				"updatedInput.questions.0.header": "Approach"}, ""},
		{"two answers to a single-select question are refused", askReq,
			message.PermissionAnswer{Behavior: "allow", Answers: map[string][]string{"Which approach?": {"A", "B"}}}, nil, "takes one answer"},
		{"a behavior other than allow or deny is refused", bash, message.PermissionAnswer{Behavior: "maybe"}, nil, "neither allow nor deny"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := answerEvent(tt.req, tt.a)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := decodeT(t, string(raw))
			if m.Kind != wire.KindControlResponse || m.ControlResponse.RequestID != tt.req.RequestID || m.UUID == "" {
				t.Fatalf("event %s is not a control_response for %s with a uuid", raw, tt.req.RequestID)
			}
			var obj map[string]any
			_ = json.Unmarshal(raw, &obj)
			inner := obj["response"].(map[string]any)["response"]
			for path, want := range tt.want {
				if got := dig(inner, path); got != want {
					t.Errorf("%s = %v, want %v (event %s)", path, got, want, raw)
				}
			}
			again, _ := answerEvent(tt.req, tt.a)
			var o2 map[string]any
			_ = json.Unmarshal(again, &o2)
			if o2["uuid"] != obj["uuid"] {
				t.Errorf("uuid changed between two builds of one answer")
			}
		})
	}
}

// dig follows a dotted path of object keys and list indexes.
func dig(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i := int(k[0] - '0')
			if len(k) != 1 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func TestLegControl(t *testing.T) {
	tests := []struct {
		name    string
		c       message.Control
		want    string
		wantErr string
	}{
		{"interrupt posts an interrupt request", message.Control{Kind: message.ControlInterrupt}, `"subtype":"interrupt"`, ""},
		{"set_permission_mode carries the mode", message.Control{Kind: message.ControlSetPermissionMode, Mode: "plan"}, `"mode":"plan"`, ""},
		{"set_model carries the model", message.Control{Kind: message.ControlSetModel, Model: "claude-opus-4-6"}, `"model":"claude-opus-4-6"`, ""},
		{"set_permission_mode without a mode is refused", message.Control{Kind: message.ControlSetPermissionMode}, "", "needs a mode"},
		{"an unknown control is refused", message.Control{Kind: "reboot"}, "", "unknown control"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &stubAPI{}
			l := newTestLeg(t, api)
			_, err := l.Control(context.Background(), message.Session{Address: "bridge:session_01a"}, tt.c)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(api.posts) != 1 || !strings.Contains(string(api.posts[0]), tt.want) {
				t.Fatalf("Control: %v; posts %s; want one containing %s", err, api.posts, tt.want)
			}
			if m := decodeT(t, string(api.posts[0])); m.Kind != wire.KindControlRequest || !strings.HasPrefix(m.ControlRequest.RequestID, string(tt.c.Kind)+"-") {
				t.Errorf("posted %s", api.posts[0])
			}
		})
	}
}

func TestLegBacklogPublishesOnlyThePromptsStillOpen(t *testing.T) {
	api := &stubAPI{history: []json.RawMessage{
		json.RawMessage(`{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}`),
		json.RawMessage(`{"type":"control_request","uuid":"u2","request_id":"open","request":{"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":"t1","input":{"command":"ls"}}}`),
		json.RawMessage(`{"type":"control_request","uuid":"u3","request_id":"withdrawn","request":{"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":"t2","input":{}}}`),
		json.RawMessage(`{"type":"control_cancel_request","uuid":"u4","request_id":"withdrawn"}`),
		json.RawMessage(`{"type":"control_request","uuid":"u5","request_id":"answered","request":{"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":"t3","input":{}}}`),
		json.RawMessage(`{"type":"control_response","uuid":"u6","response":{"subtype":"success","request_id":"answered","response":{"behavior":"allow"}}}`),
		json.RawMessage(`{"type":"result","uuid":"u7","subtype":"success","result":"done"}`),
	}}
	l := newTestLeg(t, api, "session_01a")
	f := &follow{prompts: newPrompts(), assistant: map[string]wire.Assistant{}}
	in := make(chan message.Event, 16)
	afterID, _, seen, err := l.backlog(context.Background(), "session_01a", f, emitterTo(in))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "u1,u2,u3,u4,u5,u6,u7" {
		t.Errorf("seen = %v, want every uuid read, for the stream's de-dup window", seen)
	}
	if afterID != "u7" {
		t.Errorf("resume after %q, want the last event u7", afterID)
	}
	close(in)
	var got []string
	for ev := range in {
		got = append(got, ev.Permission.RequestID+":"+string(ev.Permission.State))
	}
	if strings.Join(got, ",") != "open:pending" {
		t.Errorf("published %v, want only open:pending", got)
	}
}

func TestAHistoryEventThatDoesNotDecodeIsSkippedNotAReasonToStartOver(t *testing.T) {
	// Were the backlog to give up on it, the stream would follow the
	// session from its start: every old event, prompt and result again.
	events := []string{
		`{"type":"assistant","uuid":"u1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn"}}`,
		`{"type":"result","uuid":"u2","subtype":"success","result":"done"}`,
		`{"type":"assistant","uuid":"u3","message":{"content":5}}`,
		`{"type":"user","uuid":"u4","message":{"role":"user","content":"next"}}`,
	}
	for _, tr := range []stream.Transport{stream.TransportWS, stream.TransportSSE} {
		t.Run(string(tr), func(t *testing.T) {
			api := &stubAPI{}
			for i, e := range events {
				api.history = append(api.history, json.RawMessage(e))
				api.code = append(api.code, json.RawMessage(fmt.Sprintf(`{"event_id":"e%d","sequence_num":%d,"payload":%s}`, i+1, i+1, e)))
			}
			l := newTestLeg(t, api, sid)
			l.cfg.Transport = tr
			in := make(chan message.Event, 16)
			afterID, afterSeq, seen, err := l.backlog(context.Background(), sid, newFollow(), emitterTo(in))
			if err != nil {
				t.Fatalf("backlog: %v", err)
			}
			switch tr {
			case stream.TransportSSE:
				if afterSeq != 4 {
					t.Errorf("resume after sequence %d, want 4", afterSeq)
				}
			default:
				if afterID != "u4" || strings.Join(seen, ",") != "u1,u2,u3,u4" {
					t.Errorf("resume after %q, seen %v; want u4 and every uuid", afterID, seen)
				}
			}
			if len(in) != 0 {
				t.Errorf("%d events published from the history, want none", len(in))
			}
		})
	}
}

func TestAHistoryPageWithNothingToContinueAfterEndsTheBacklog(t *testing.T) {
	// Asking after the same point again would get the same page for ever.
	api := &stubAPI{history: []json.RawMessage{
		json.RawMessage(`{"type":"user","message":{"role":"user","content":"a"}}`),
		json.RawMessage(`{"type":"assistant","message":{"content":5}}`),
		json.RawMessage(`{"type":"user","message":{"role":"user","content":"c"}}`),
	}}
	l := newTestLeg(t, api, sid)
	afterID, _, _, err := l.backlog(context.Background(), sid, newFollow(), emitterTo(make(chan message.Event, 16)))
	if err != nil || afterID != "" {
		t.Fatalf("backlog = %q, %v; want no resume point and no error", afterID, err)
	}
}

func TestAliasNames(t *testing.T) {
	listed := []RemoteSession{
		{ID: "session_01a", Title: "Fix the flaky test!"},
		{ID: "session_01b", Title: "fix the FLAKY test"},
		{ID: "session_01c", Title: ""},
		{ID: "session_01d", Title: "something else"},
		{ID: "session_01e", Title: strings.Repeat("very long title ", 10)},
	}
	names := aliasNames(listed, map[string]string{"session_01d": "reviewer"})
	tests := []struct {
		name, id, want string
	}{
		{"a title becomes a lower-case dashed name", "session_01a", "fix-the-flaky-test"},
		{"a second session with the same name gets its ref appended", "session_01b", "fix-the-flaky-test-" + addressing.Ref("session_01b")},
		{"a session without a title is named by its ref", "session_01c", "remote-" + addressing.Ref("session_01c")},
		{"a fixed alias wins over the title", "session_01d", "reviewer"},
		{"a long title is cut at 40 characters", "session_01e", "very-long-title-very-long-title-very-lon"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names[tt.id]; got != tt.want {
				t.Errorf("name of %s = %q, want %q", tt.id, got, tt.want)
			}
			if len(names[tt.id]) > maxAliasName+8 {
				t.Errorf("name %q is too long", names[tt.id])
			}
		})
	}
	if _, err := NewLeg(LegConfig{API: &stubAPI{}, BaseURL: "http://x", Aliases: map[string]string{"session_01a": "has space"}}); err == nil {
		t.Error("an alias name with a space was accepted")
	}
}

func TestRemoteAnswersGoBackToTheSendersOfTheirTurn(t *testing.T) {
	user := func(uuid string) string {
		return `{"type":"user","uuid":"` + uuid + `","message":{"role":"user","content":"x"}}`
	}
	assistant := func(uuid, text string, final bool) string {
		stop := "null"
		if final {
			stop = `"end_turn"`
		}
		return `{"type":"assistant","uuid":"` + uuid + `","message":{"id":"msg_` + uuid + `","role":"assistant","content":[{"type":"text","text":"` + text + `"}],"stop_reason":` + stop + `}}`
	}
	result := func(text string) string { return `{"type":"result","subtype":"success","result":"` + text + `"}` }
	send := func(t *testing.T, l *Leg, id, from string) {
		m := message.Message{ID: id, To: "bridge:session_01a", Body: "q from " + from, From: "uds:/run/" + from + ".sock", FromName: from}
		if rc, err := l.Send(context.Background(), m); err != nil || rc.Status != message.StatusSent {
			t.Fatalf("Send: %+v %v", rc, err)
		}
	}
	replies := func(evs []message.Event) []string {
		var out []string
		for _, ev := range evs {
			if ev.Type == message.EventMessage {
				out = append(out, ev.Message.AliasOf+"<-"+ev.Message.Body)
			}
		}
		return out
	}

	t.Run("the result of a turn goes to the senders whose messages it began with", func(t *testing.T) {
		api := &stubAPI{}
		l := newTestLeg(t, api, "session_01a")
		f := &follow{prompts: newPrompts(), assistant: map[string]wire.Assistant{}}
		tr := func(line string) []message.Event {
			return l.translate("session_01a", f, stream.Update{Message: decodeT(t, line)})
		}
		send(t, l, "m-a", "alice")
		tr(user(EventUUID("m-a")))
		tr(assistant("a1", "thinking", false))
		send(t, l, "m-b", "bob") // arrives while alice's turn runs
		tr(user(EventUUID("m-b")))
		if got := replies(tr(result("answer for alice"))); strings.Join(got, "|") != "uds:/run/alice.sock<-answer for alice" {
			t.Fatalf("first result went to %v", got)
		}
		tr(assistant("a2", "x", false))
		if got := replies(tr(result("answer for bob"))); strings.Join(got, "|") != "uds:/run/bob.sock<-answer for bob" {
			t.Fatalf("second result went to %v", got)
		}
		if got := replies(tr(result("a turn nobody here asked for"))); len(got) != 0 {
			t.Errorf("a foreign turn's result went to %v", got)
		}
		var posted map[string]any
		_ = json.Unmarshal(api.posts[0], &posted)
		if c := posted["message"].(map[string]any)["content"].(string); !strings.HasPrefix(c, "Message from alice") || !strings.HasSuffix(c, "q from alice") {
			t.Errorf("posted content %q, want it attributed to alice", c)
		}
	})

	t.Run("the reply comes from the session's alias name, addressed to the sender", func(t *testing.T) {
		l := newTestLeg(t, &stubAPI{sessions: []RemoteSession{{ID: "session_01a", Title: "Build bot"}}}, "session_01a")
		if _, err := l.Sessions(context.Background()); err != nil {
			t.Fatal(err)
		}
		f := &follow{prompts: newPrompts(), assistant: map[string]wire.Assistant{}}
		send(t, l, "m-c", "carol")
		l.translate("session_01a", f, stream.Update{Message: decodeT(t, user(EventUUID("m-c")))})
		evs := l.translate("session_01a", f, stream.Update{Message: decodeT(t, result("done"))})
		m := evs[len(evs)-1].Message
		if m == nil || m.FromName != "build-bot" || m.From != "bridge:session_01a" || m.To != "uds:/run/carol.sock" || m.ToName != "carol" {
			t.Fatalf("reply = %+v", m)
		}
	})

	t.Run("in assistant mode each finished assistant message goes back as it comes", func(t *testing.T) {
		l, err := NewLeg(LegConfig{API: &stubAPI{}, BaseURL: "http://x", Follow: []string{"session_01a"}, Reply: ReplyAssistant})
		if err != nil {
			t.Fatal(err)
		}
		f := &follow{prompts: newPrompts(), assistant: map[string]wire.Assistant{}}
		tr := func(line string) []message.Event {
			return l.translate("session_01a", f, stream.Update{Message: decodeT(t, line)})
		}
		send(t, l, "m-d", "dave")
		tr(user(EventUUID("m-d")))
		if got := replies(tr(assistant("a3", "partial", false))); len(got) != 0 {
			t.Errorf("an unfinished copy went back: %v", got)
		}
		if got := replies(tr(assistant("a3", "first part", true))); strings.Join(got, "|") != "uds:/run/dave.sock<-first part" {
			t.Errorf("the finished message went to %v", got)
		}
		if got := replies(tr(result("first part"))); len(got) != 0 {
			t.Errorf("the result was sent again in assistant mode: %v", got)
		}
	})
}

func TestReadySaysWhichStreamsGaveUpOrWaitLong(t *testing.T) {
	tests := []struct {
		name  string
		links map[string]stream.Link
		want  string // "" ready
	}{
		{"connected and briefly reconnecting streams are ready", map[string]stream.Link{
			"a": {State: stream.LinkConnected}, "b": {State: stream.LinkReconnecting, Delay: 4 * time.Second},
		}, ""},
		{"a stream that gave up is not", map[string]stream.Link{
			"a": {State: stream.LinkGaveUp}, "b": {State: stream.LinkConnected},
		}, "live stream gave up for a"},
		{"a stream told to wait an hour is not", map[string]stream.Link{
			"a": {State: stream.LinkReconnecting, Delay: time.Hour}, "b": {State: stream.LinkGaveUp},
		}, "live stream gave up for b; live stream waits long to reconnect for a (1h0m0s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newTestLeg(t, &stubAPI{})
			l.listedAt = time.Unix(1700000000, 0)
			for id, k := range tt.links {
				f := newFollow()
				f.link = k
				l.links[id] = f
			}
			err := l.Ready()
			if got := fmt.Sprint(err); (tt.want == "" && err != nil) || (tt.want != "" && got != tt.want) {
				t.Errorf("Ready() = %v, want %q", err, tt.want)
			}
		})
	}
}

// emitterTo is an emitter of the remote leg attached to in, as Run makes
// one, for tests that call the leg's inner steps.
func emitterTo(in chan message.Event) *leg.Emitter {
	em := leg.NewEmitter(message.ProtocolRemote, time.Now)
	em.Attach(in)
	return em
}
