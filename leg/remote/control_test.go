package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
)

const sid = "session_01a"

func newFollow() *follow {
	return &follow{done: make(chan struct{}), prompts: newPrompts(), assistant: map[string]wire.Assistant{}}
}

// tr translates one line of session sid.
func tr(t *testing.T, l *Leg, f *follow, line string) []message.Event {
	t.Helper()
	return l.translate(sid, f, stream.Update{Message: decodeT(t, line)})
}

func drops(evs []message.Event) (n int) {
	for _, ev := range evs {
		if ev.Type == message.EventDrop && ev.Drop.Reason == message.DropUnserved {
			n++
		}
	}
	return n
}

func TestControlRequestsTheGatewayDoesNotServeAreRefusedAtOnce(t *testing.T) {
	tests := []struct {
		name, line string
		refused    bool
	}{
		{"a hook_callback is refused", `{"type":"control_request","uuid":"u1","request_id":"hook-1","request":{"subtype":"hook_callback","callback_id":"hook_0","input":{}}}`, true},
		{"an mcp_message is refused", `{"type":"control_request","uuid":"u2","request_id":"mcp-1","request":{"subtype":"mcp_message","server_name":"s","message":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}}`, true},
		{"a subtype nobody knows is refused", `{"type":"control_request","uuid":"u3","request_id":"x-1","request":{"subtype":"elicitation"}}`, true},
		{"a client's set_model (ours echoed, or the web app's) is not", `{"type":"control_request","uuid":"u4","request_id":"set_model-1","request":{"subtype":"set_model","model":"m"}}`, false},
		{"an interrupt is not", `{"type":"control_request","uuid":"u5","request_id":"int-1","request":{"subtype":"interrupt"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &stubAPI{}
			l := newTestLeg(t, api, sid)
			f := newFollow()
			evs := tr(t, l, f, tt.line)
			l.postRefusals(context.Background(), sid, f)
			m := decodeT(t, tt.line)
			if re := evs[0].Remote; re == nil || re.Control == nil || re.Control.RequestID != m.ControlRequest.RequestID ||
				re.Control.Subtype != m.ControlRequest.SubtypeRaw || re.Control.Unserved != tt.refused {
				t.Fatalf("remote event = %+v, want the request surfaced (unserved %v)", evs[0].Remote, tt.refused)
			}
			if !tt.refused {
				if len(api.posts) != 0 || drops(evs) != 0 {
					t.Fatalf("posted %s, %d drops; want nothing", api.posts, drops(evs))
				}
				return
			}
			if drops(evs) != 1 {
				t.Errorf("%d unserved drops counted, want 1", drops(evs))
			}
			if len(api.posts) != 1 {
				t.Fatalf("posted %d events, want one refusal", len(api.posts))
			}
			var got map[string]any
			if err := json.Unmarshal(api.posts[0], &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"type": "control_response", "uuid": answerUUID(sid, m.ControlRequest.RequestID),
				"response": map[string]any{"subtype": "error", "request_id": m.ControlRequest.RequestID,
					"error": "the gateway does not serve " + m.ControlRequest.SubtypeRaw + " control requests"}}
			if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
				t.Errorf("posted\n%s\nwant\n%s", g, w)
			}
			// A replay of the same request is not answered or counted twice.
			if evs := tr(t, l, f, tt.line); drops(evs) != 0 {
				t.Errorf("a replayed request counted again")
			}
			if l.postRefusals(context.Background(), sid, f); len(api.posts) != 1 {
				t.Errorf("a replayed request refused again")
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTheHistoryRefusesOnlyUnservedRequestsStillUnanswered(t *testing.T) {
	api := &stubAPI{history: []json.RawMessage{
		json.RawMessage(`{"type":"control_request","uuid":"u1","request_id":"open","request":{"subtype":"hook_callback","callback_id":"h"}}`),
		json.RawMessage(`{"type":"control_request","uuid":"u2","request_id":"done","request":{"subtype":"hook_callback","callback_id":"h"}}`),
		json.RawMessage(`{"type":"control_response","uuid":"u3","response":{"subtype":"success","request_id":"done","response":{}}}`),
		json.RawMessage(`{"type":"control_request","uuid":"u4","request_id":"ours","request":{"subtype":"interrupt"}}`),
	}}
	l := newTestLeg(t, api, sid)
	in := make(chan message.Event, 16)
	if _, _, _, err := l.backlog(context.Background(), sid, newFollow(), emitterTo(in)); err != nil {
		t.Fatal(err)
	}
	close(in)
	var evs []message.Event
	for ev := range in {
		evs = append(evs, ev)
	}
	if drops(evs) != 1 || len(api.posts) != 1 || !strings.Contains(string(api.posts[0]), `"request_id":"open"`) {
		t.Fatalf("%d drops, posted %s; want the open hook_callback alone refused", drops(evs), api.posts)
	}
}

func TestControlsReportTheSessionsAnswer(t *testing.T) {
	answer := func(subtype string) func(rid string) string {
		return func(rid string) string {
			if subtype == "success" {
				return `{"type":"control_response","uuid":"r-` + rid + `","response":{"subtype":"success","request_id":"` + rid + `","response":{}}}`
			}
			return `{"type":"control_response","uuid":"r-` + rid + `","response":{"subtype":"error","request_id":"` + rid + `","error":"Invalid model"}}`
		}
	}
	tests := []struct {
		name     string
		answer   func(rid string) string // nil: no answer
		follow   bool
		listed   []RemoteSession
		check    func(t *testing.T, r message.ControlResult, err error)
		nothings bool // nothing may be posted
	}{
		{"a success answer acknowledges", answer("success"), true, nil, func(t *testing.T, r message.ControlResult, err error) {
			if err != nil || !r.Acknowledged || !strings.HasPrefix(r.RequestID, "set_model-") {
				t.Fatalf("= %+v, %v; want acknowledged", r, err)
			}
		}, false},
		{"an error answer is the session's refusal", answer("error"), true, nil, func(t *testing.T, r message.ControlResult, err error) {
			var re *message.ControlRefusedError
			if !errors.As(err, &re) || re.Reason != "Invalid model" || r.Acknowledged {
				t.Fatalf("= %+v, %v; want the session's error", r, err)
			}
		}, false},
		{"no answer in time is ErrNoControlAnswer", nil, true, nil, func(t *testing.T, r message.ControlResult, err error) {
			if !errors.Is(err, message.ErrNoControlAnswer) || r.Acknowledged {
				t.Fatalf("= %+v, %v; want no answer", r, err)
			}
		}, false},
		{"a session not followed is sent to, not acknowledged", nil, false, []RemoteSession{{ID: sid}}, func(t *testing.T, r message.ControlResult, err error) {
			if err != nil || r.Acknowledged || !strings.Contains(r.Detail, "not followed") {
				t.Fatalf("= %+v, %v; want sent, not acknowledged", r, err)
			}
		}, false},
		{"a session neither listed nor followed is not found", nil, false, []RemoteSession{{ID: "session_other"}}, func(t *testing.T, r message.ControlResult, err error) {
			var nf *addressing.NotFoundError
			if !errors.As(err, &nf) {
				t.Fatalf("= %+v, %v; want not found", r, err)
			}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &stubAPI{sessions: tt.listed}
			l, err := NewLeg(LegConfig{API: api, BaseURL: "http://127.0.0.1:1", ControlTimeout: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Sessions(context.Background()); err != nil {
				t.Fatal(err)
			}
			f := newFollow()
			if tt.follow {
				l.links[sid] = f
			}
			api.onPost = func(ev json.RawMessage) {
				m := decodeT(t, string(ev))
				// The server echoes the request, then the session answers.
				tr(t, l, f, string(ev))
				if tt.answer != nil {
					tr(t, l, f, tt.answer(m.ControlRequest.RequestID))
				}
			}
			r, err := l.Control(context.Background(), message.Session{SessionID: sid}, message.Control{Kind: message.ControlSetModel, Model: "claude-opus-4-6"})
			tt.check(t, r, err)
			if posted := len(api.posts); tt.nothings != (posted == 0) {
				t.Errorf("%d events posted", posted)
			}
			if len(l.waiters) != 0 {
				t.Errorf("%d waiters left behind", len(l.waiters))
			}
		})
	}
}

func TestInfoIsWhatTheSessionSaid(t *testing.T) {
	l := newTestLeg(t, &stubAPI{}, sid)
	f := newFollow()
	l.links[sid] = f
	if info, err := l.Info(context.Background(), message.Session{SessionID: sid}); err != nil || info.Initialized || !info.Followed || info.Models == nil {
		t.Fatalf("before initialize: %+v, %v", info, err)
	}
	tr(t, l, f, `{"type":"control_response","response":{"subtype":"success","request_id":"init-1","response":{"account":{},"commands":[{"name":"review","description":"Review a PR","argumentHint":"[pr]"},"compact"],"models":[{"value":"claude-opus-4-6","displayName":"Opus","description":"most capable"},"claude-haiku-4-5",{"nonsense":1}],"output_style":"normal","pid":7}}}`)
	tr(t, l, f, `{"type":"system","subtype":"init","uuid":"s1","model":"claude-opus-4-6","permissionMode":"default"}`)
	tr(t, l, f, `{"type":"control_request","uuid":"c1","request_id":"pm-1","request":{"subtype":"set_permission_mode","mode":"plan"}}`)
	tr(t, l, f, `{"type":"control_response","uuid":"c2","response":{"subtype":"success","request_id":"pm-1","response":{}}}`)
	tr(t, l, f, `{"type":"control_request","uuid":"c3","request_id":"sm-1","request":{"subtype":"set_model","model":"claude-haiku-4-5"}}`)
	tr(t, l, f, `{"type":"control_response","uuid":"c4","response":{"subtype":"error","request_id":"sm-1","error":"no"}}`)
	info, err := l.Info(context.Background(), message.Session{Address: "bridge:" + sid})
	if err != nil {
		t.Fatal(err)
	}
	want := message.SessionInfo{SessionID: sid, Address: "bridge:" + sid, Followed: true, Initialized: true, OutputStyle: "normal",
		Models:   []message.ModelInfo{{Value: "claude-opus-4-6", DisplayName: "Opus", Description: "most capable"}, {Value: "claude-haiku-4-5"}},
		Commands: []message.CommandInfo{{Name: "review", Description: "Review a PR", ArgumentHint: "[pr]"}, {Name: "compact"}},
		// The mode change was accepted; the model change refused.
		PermissionMode: "plan", Model: "claude-opus-4-6", Updated: info.Updated}
	if g, w := mustJSON(t, info), mustJSON(t, want); g != w {
		t.Errorf("info\n%s\nwant\n%s", g, w)
	}
	if err := info.CheckModel("gpt-5"); err == nil || !strings.Contains(err.Error(), "claude-haiku-4-5") {
		t.Errorf("CheckModel(gpt-5) = %v, want a refusal naming the offered models", err)
	}
	if err := info.CheckModel("Opus"); err != nil {
		t.Errorf("CheckModel(Opus) = %v, want a display name accepted", err)
	}
}

func TestRepliesSurviveALateOrMissingEcho(t *testing.T) {
	user := func(uuid string) string {
		return `{"type":"user","uuid":"` + uuid + `","message":{"role":"user","content":"x"}}`
	}
	assistant := `{"type":"assistant","uuid":"a1","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":null}}`
	result := func(text string) string { return `{"type":"result","subtype":"success","result":"` + text + `"}` }
	replies := func(evs []message.Event) (out []string) {
		for _, ev := range evs {
			switch {
			case ev.Type == message.EventMessage:
				out = append(out, "reply:"+ev.Message.To+"<-"+ev.Message.Body)
			case ev.Type == message.EventReceipt:
				out = append(out, "receipt:"+ev.Receipt.MsgID+":"+ev.Receipt.Status.String())
			}
		}
		return out
	}
	l := newTestLeg(t, &stubAPI{}, sid)
	f := newFollow()
	m := message.Message{ID: "m-a", To: "bridge:" + sid, Body: "q", From: "uds:/run/alice.sock", FromName: "alice"}
	if rc, err := l.Send(context.Background(), m); err != nil || rc.Status != message.StatusSent {
		t.Fatalf("Send = %+v, %v", rc, err)
	}
	// No echo: the turn that begins after the accepted post answers alice.
	tr(t, l, f, assistant)
	if got := strings.Join(replies(tr(t, l, f, result("answer"))), "|"); got != "reply:uds:/run/alice.sock<-answer" {
		t.Fatalf("the turn after the post gave %q, want alice answered", got)
	}
	// The late echo is the delivered receipt, and nothing more: the next
	// turn answers nobody.
	if got := strings.Join(replies(tr(t, l, f, user(EventUUID("m-a")))), "|"); got != "receipt:m-a:delivered" {
		t.Fatalf("the late echo gave %q, want only the delivered receipt", got)
	}
	tr(t, l, f, assistant)
	if got := replies(tr(t, l, f, result("another"))); len(got) != 0 {
		t.Fatalf("a later turn gave %v, want nothing", got)
	}
	if len(l.unechoed) != 0 {
		t.Errorf("unechoed = %v, want none left", l.unechoed)
	}
}

func TestInfoSaysWhetherASessionIsFollowed(t *testing.T) {
	listed := []RemoteSession{{ID: "session_a"}, {ID: "session_old", Status: "archived"}}
	tests := []struct {
		name, id string
		follow   []string
		want     string // followed, not-followed or not-found
	}{
		{"a session named to follow is followed before its stream starts", "session_a", []string{"session_a"}, "followed"},
		{"with all, a listed session is followed before its stream starts", "session_a", []string{FollowAll}, "followed"},
		{"with all, an archived one is not", "session_old", []string{FollowAll}, "not-followed"},
		{"a listed session not named is not followed", "session_a", []string{"session_b"}, "not-followed"},
		{"an unlisted session not named is not found", "session_z", []string{FollowAll}, "not-found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newTestLeg(t, &stubAPI{sessions: listed}, tt.follow...)
			if _, err := l.Sessions(context.Background()); err != nil {
				t.Fatal(err)
			}
			info, err := l.Info(context.Background(), message.Session{SessionID: tt.id})
			got := "not-followed"
			var nf *addressing.NotFoundError
			switch {
			case errors.As(err, &nf):
				got = "not-found"
			case err != nil:
				t.Fatal(err)
			case info.Followed:
				got = "followed"
			}
			if got != tt.want {
				t.Fatalf("%s, want %s", got, tt.want)
			}
		})
	}
}

func TestASessionsOpenPromptsAreCappedForgettingTheOldest(t *testing.T) {
	const n = 5000
	prompt := func(i int) string {
		return fmt.Sprintf(`{"type":"control_request","uuid":"u%d","request_id":"r%d","request":{"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":"t%d","input":{"command":"ls"}}}`, i, i, i)
	}
	check := func(t *testing.T, f *follow, evs []message.Event) {
		t.Helper()
		if got := f.prompts.Len(); got != maxOpenPrompts {
			t.Errorf("%d prompts kept, want the cap %d", got, maxOpenPrompts)
		}
		if _, ok := f.prompts.Get(fmt.Sprintf("r%d", n-1)); !ok {
			t.Error("the newest prompt was forgotten")
		}
		if _, ok := f.prompts.Get("r0"); ok {
			t.Error("the oldest prompt is still kept")
		}
		var dropped int
		for _, ev := range evs {
			if ev.Type == message.EventDrop && ev.Drop.Reason == message.DropQueueFull {
				dropped++
			}
		}
		if dropped != n-maxOpenPrompts {
			t.Errorf("%d drops counted, want %d", dropped, n-maxOpenPrompts)
		}
	}
	t.Run("live prompts", func(t *testing.T) {
		l := newTestLeg(t, &stubAPI{}, sid)
		f := newFollow()
		var evs []message.Event
		for i := range n {
			evs = append(evs, tr(t, l, f, prompt(i))...)
		}
		check(t, f, evs)
		// The router still has the forgotten one: its answer from
		// elsewhere still settles it.
		evs = tr(t, l, f, `{"type":"control_response","uuid":"a0","response":{"subtype":"success","request_id":"r0","response":{"behavior":"allow"}}}`)
		if len(evs) != 2 || evs[1].Permission == nil || evs[1].Permission.RequestID != "r0" || evs[1].Permission.State != message.PermissionAnswered {
			t.Errorf("answer to a forgotten prompt gave %+v, want it answered", evs)
		}
	})
	t.Run("prompts read from the history", func(t *testing.T) {
		f, evs := fromHistory(t, 500, n, prompt)
		raised := 0
		for _, ev := range evs {
			if ev.Type == message.EventPermission {
				raised++
			}
		}
		check(t, f, evs)
		if raised != maxOpenPrompts {
			t.Errorf("%d prompts raised from the history, want %d", raised, maxOpenPrompts)
		}
	})
}

func TestASessionsOpenPromptsAreCappedInBytesForgettingTheOldest(t *testing.T) {
	// Each prompt holds 1 MiB of tool input: far under the count, the
	// byte budget keeps the newest that fit in it.
	const n, size = 40, 1 << 20
	input := strings.Repeat("x", size)
	prompt := func(i int) string {
		return fmt.Sprintf(`{"type":"control_request","uuid":"u%d","request_id":"r%d","request":{"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":"t%d","input":{"command":%q}}}`, i, i, i, input)
	}
	check := func(t *testing.T, f *follow, evs []message.Event) {
		t.Helper()
		kept := f.prompts.Len()
		if w := f.prompts.Weight(); w > maxPromptBytes || w+size+64 <= maxPromptBytes {
			t.Errorf("%d prompts of %d bytes kept, want as many as %d bytes hold", kept, w, maxPromptBytes)
		}
		if _, ok := f.prompts.Get(fmt.Sprintf("r%d", n-1)); !ok {
			t.Error("the newest prompt was forgotten")
		}
		if _, ok := f.prompts.Get(fmt.Sprintf("r%d", n-kept-1)); ok {
			t.Error("an old prompt is kept past the budget")
		}
		var dropped []string
		for _, ev := range evs {
			if ev.Type == message.EventDrop && ev.Drop.Reason == message.DropQueueFull {
				dropped = append(dropped, ev.Drop.MsgID)
			}
		}
		if len(dropped) != n-kept || len(dropped) > 0 && dropped[0] != "r0" {
			t.Errorf("drops counted %v, want the oldest %d", dropped, n-kept)
		}
	}
	t.Run("live prompts", func(t *testing.T) {
		l := newTestLeg(t, &stubAPI{}, sid)
		f := newFollow()
		var evs []message.Event
		for i := range n {
			evs = append(evs, tr(t, l, f, prompt(i))...)
		}
		check(t, f, evs)
	})
	t.Run("prompts read from the history", func(t *testing.T) {
		f, evs := fromHistory(t, 10, n, prompt)
		check(t, f, evs)
	})
}

// fromHistory reads a history of n events, event(i) each, in pages of page
// into a new follow, and returns it with the events it raised.
func fromHistory(t *testing.T, page, n int, event func(int) string) (*follow, []message.Event) {
	t.Helper()
	api := &stubAPI{page: page}
	for i := range n {
		api.history = append(api.history, json.RawMessage(event(i)))
	}
	l := newTestLeg(t, api, sid)
	f := newFollow()
	in := make(chan message.Event, 2*n)
	if _, _, _, err := l.backlog(context.Background(), sid, f, emitterTo(in)); err != nil {
		t.Fatal(err)
	}
	close(in)
	var evs []message.Event
	for ev := range in {
		evs = append(evs, ev)
	}
	return f, evs
}
