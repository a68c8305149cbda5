package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// remoteSession is the prompt leg's one session.
const remoteSession = legtest.SessionID

func permID(request string) string {
	sum := sha256.Sum256([]byte(remoteSession + "\x00" + request))
	return "p" + hex.EncodeToString(sum[:])[:6]
}

// newPermissionServer serves a running router over a Claude stub leg and a
// remote leg that has raised two prompts: "bash" (Bash) and "ask"
// (AskUserQuestion).
func newPermissionServer(tb testing.TB) (*Server, *legtest.PromptLeg) {
	tb.Helper()
	claudeLeg := claudeStub() // the same Claude sessions as the other tests
	leg := legtest.NewPromptLeg()
	rt := router.New(router.Config{}, claudeLeg, leg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("router: %v", err)
		}
	})
	_, _, sub := rt.Hub().Subscribe(-1)
	defer sub.Close()
	leg.Raise(message.Event{Type: message.EventPermission, Leg: message.ProtocolRemote, Permission: &message.PermissionRequest{
		SessionID: remoteSession, Address: "bridge:" + remoteSession, RequestID: "bash", ToolName: "Bash", ToolUseID: "toolu_1",
		Input: json.RawMessage(`{"command":"go test ./..."}`), State: message.PermissionPending}},
		message.Event{Type: message.EventPermission, Leg: message.ProtocolRemote, Permission: &message.PermissionRequest{
			SessionID: remoteSession, Address: "bridge:" + remoteSession, RequestID: "ask", ToolName: "AskUserQuestion", ToolUseID: "toolu_2",
			Input: json.RawMessage(`{"questions":[]}`), State: message.PermissionPending, Questions: []message.Question{
				{Question: "Which approach?", Header: "Approach", Options: []string{"Option A", "Option B"}},
				{Question: "Which features?", Header: "Features", MultiSelect: true, Options: []string{"Logging", "Metrics"}},
			}}})
	for range 2 {
		if ev := <-sub.C; ev.Type != message.EventPermission {
			tb.Fatalf("published %+v, want a permission prompt", ev)
		}
	}
	return NewServer(Config{Router: rt, Token: "tok"}), leg
}

func TestPermissionEndpoints(t *testing.T) {
	type step struct {
		method, path, body string
		status             int
		check              func(t *testing.T, body []byte, leg *legtest.PromptLeg)
	}
	listed := func(want ...string) func(t *testing.T, body []byte, _ *legtest.PromptLeg) {
		return func(t *testing.T, body []byte, _ *legtest.PromptLeg) {
			var ps []message.PermissionRequest
			if err := json.Unmarshal(body, &ps); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range ps {
				got = append(got, p.RequestID+":"+string(p.State))
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("listed %v, want %v", got, want)
			}
		}
	}
	code := func(want string) func(t *testing.T, body []byte, _ *legtest.PromptLeg) {
		return func(t *testing.T, body []byte, _ *legtest.PromptLeg) {
			var e Error
			if err := json.Unmarshal(body, &e); err != nil || e.Code != want || e.Error == "" {
				t.Fatalf("body %s, want a JSON error with code %s", body, want)
			}
		}
	}
	bash, ask := "/v1/permissions/"+permID("bash"), "/v1/permissions/"+permID("ask")
	tests := []struct {
		name  string
		steps []step
	}{
		{"the pending list shows each prompt with its id, session, tool and input", []step{
			{"GET", "/v1/permissions", "", 200, func(t *testing.T, body []byte, _ *legtest.PromptLeg) {
				var ps []map[string]any
				if err := json.Unmarshal(body, &ps); err != nil || len(ps) != 2 {
					t.Fatalf("body %s", body)
				}
				p := ps[0]
				if p["id"] != permID("bash") || p["session_id"] != remoteSession || p["tool_name"] != "Bash" || p["input"].(map[string]any)["command"] != "go test ./..." {
					t.Fatalf("first prompt %v", p)
				}
			}},
		}},
		{"one prompt is read by its id", []step{
			{"GET", bash, "", 200, func(t *testing.T, body []byte, _ *legtest.PromptLeg) {
				var p message.PermissionRequest
				if err := json.Unmarshal(body, &p); err != nil || p.RequestID != "bash" || p.State != message.PermissionPending {
					t.Fatalf("body %s", body)
				}
			}},
		}},
		{"an unknown id is 404", []step{
			{"GET", "/v1/permissions/p000000", "", 404, code(CodeNotFound)},
			{"POST", "/v1/permissions/p000000", `{"behavior":"allow"}`, 404, code(CodeNotFound)},
		}},
		{"an answer settles the prompt once, recorded as the control socket's", []step{
			{"POST", bash, `{"behavior":"allow","rules":[{"tool_name":"Bash","rule_content":"go test ./..."}]}`, 200, func(t *testing.T, body []byte, leg *legtest.PromptLeg) {
				var p message.PermissionRequest
				if err := json.Unmarshal(body, &p); err != nil || p.State != message.PermissionAnswered || p.Answer == nil || p.Answer.By != "socket:api" || p.AnsweredBy != "socket:api" {
					t.Fatalf("body %s", body)
				}
				if a := leg.Answers(); len(a) != 1 || a[0].Rules[0].RuleContent != "go test ./..." {
					t.Fatalf("leg got %+v", a)
				}
			}},
			{"POST", bash, `{"behavior":"deny","by":"cli"}`, 409, code(CodeConflict)},
			{"GET", "/v1/permissions", "", 200, listed("ask:pending")},
			{"GET", "/v1/permissions?all=true", "", 200, listed("bash:answered", "ask:pending")},
		}},
		{"questions are answered by text with labels", []step{
			{"POST", ask, `{"behavior":"allow","answers":{"Which approach?":["Option B"],"Which features?":["Logging","Metrics"]}}`, 200, func(t *testing.T, _ []byte, leg *legtest.PromptLeg) {
				if a := leg.Answers(); len(a) != 1 || len(a[0].Answers["Which features?"]) != 2 {
					t.Fatalf("leg got %+v", a)
				}
			}},
		}},
		{"invalid answers are 400 and leave the prompt pending", []step{
			{"POST", bash, `{"behavior":"perhaps"}`, 400, code(CodeBadRequest)},
			{"POST", bash, `{"behavior":"allow","updated_input":[1]}`, 400, code(CodeBadRequest)},
			{"POST", bash, `{"behavior":"allow","answers":{"Q":["A"]}}`, 400, code(CodeBadRequest)},
			{"POST", ask, `{"behavior":"allow","answers":{"Which approach?":["Option C"],"Which features?":["Logging"]}}`, 400, func(t *testing.T, body []byte, _ *legtest.PromptLeg) {
				if !strings.Contains(string(body), `Option A`) {
					t.Fatalf("body %s: want the valid options listed", body)
				}
			}},
			{"POST", bash, `{"behavior":"allow","unknown":1}`, 400, code(CodeBadRequest)},
			{"POST", bash, ``, 400, code(CodeBadRequest)},
			{"GET", "/v1/permissions?all=maybe", "", 400, code(CodeBadRequest)},
			{"GET", "/v1/permissions", "", 200, listed("bash:pending", "ask:pending")},
		}},
		{"a control request reaches the remote leg", []step{
			{"POST", "/v1/control", `{"address":"bridge:` + remoteSession + `","kind":"set_permission_mode","mode":"plan"}`, 200, func(t *testing.T, _ []byte, leg *legtest.PromptLeg) {
				if c := leg.Controls(); len(c) != 1 || c[0].Mode != "plan" {
					t.Fatalf("leg got %+v", c)
				}
			}},
			{"POST", "/v1/control", `{"address":"fix-the-bug","kind":"interrupt"}`, 200, nil},
		}},
		{"bad control requests are 4xx", []step{
			{"POST", "/v1/control", `{"kind":"interrupt"}`, 400, code(CodeBadRequest)},
			{"POST", "/v1/control", `{"address":"fix-the-bug","kind":"reboot"}`, 400, code(CodeBadRequest)},
			{"POST", "/v1/control", `{"address":"review","kind":"interrupt"}`, 400, code(CodeBadRequest)},
			{"POST", "/v1/control", `{"address":"nobody-here","kind":"interrupt"}`, 404, code(CodeNotFound)},
		}},
		{"an address resolves to its session", []step{
			{"GET", "/v1/resolve?address=fix-the-bug", "", 200, func(t *testing.T, body []byte, _ *legtest.PromptLeg) {
				var s message.Session
				if err := json.Unmarshal(body, &s); err != nil || s.SessionID != remoteSession || s.Protocol != message.ProtocolRemote {
					t.Fatalf("body %s", body)
				}
			}},
			{"GET", "/v1/resolve", "", 400, code(CodeBadRequest)},
			{"GET", "/v1/resolve?address=nobody-here", "", 404, code(CodeNotFound)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, leg := newPermissionServer(t)
			h := srv.Handler()
			for _, s := range tt.steps {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(s.method, s.path, strings.NewReader(s.body)))
				if rec.Code != s.status {
					t.Fatalf("%s %s: status %d, want %d: %s", s.method, s.path, rec.Code, s.status, rec.Body.String())
				}
				if s.check != nil {
					s.check(t, rec.Body.Bytes(), leg)
				}
			}
		})
	}
}

func TestALegFailureIs502AndNever500(t *testing.T) {
	srv, leg := newPermissionServer(t)
	leg.FailAnswers(errors.New("upstream said 503"))
	leg.FailControls(errors.New("stream down"))
	h := srv.Handler()
	for _, s := range []struct{ path, body string }{
		{"/v1/permissions/" + permID("bash"), `{"behavior":"allow"}`},
		{"/v1/control", `{"address":"fix-the-bug","kind":"interrupt"}`},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", s.path, strings.NewReader(s.body)))
		var e Error
		if rec.Code != http.StatusBadGateway || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code != CodeBadGateway {
			t.Fatalf("POST %s: %d %s, want 502 bad_gateway", s.path, rec.Code, rec.Body.String())
		}
	}
}

func TestTheClientSpeaksThePermissionEndpoints(t *testing.T) {
	srv, leg := newPermissionServer(t)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config.Handler = srv.TCPHandler(ts.Listener.Addr().String())
	ts.Start()
	defer ts.Close()
	c := NewTCPClient(ts.URL, "tok")
	ctx := context.Background()

	ps, err := c.Permissions(ctx, false)
	if err != nil || len(ps) != 2 {
		t.Fatalf("Permissions = %v, %v", ps, err)
	}
	p, err := c.Permission(ctx, ps[0].ID)
	if err != nil || p.RequestID != "bash" {
		t.Fatalf("Permission = %+v, %v", p, err)
	}
	// Over TCP the answer is the token's, whatever the body says it is.
	p, err = c.AnswerPermission(ctx, p.ID, message.PermissionAnswer{Behavior: message.BehaviorDeny, Message: "not now", By: "cli"})
	if err != nil || p.State != message.PermissionAnswered || p.AnsweredBy != "token:default" {
		t.Fatalf("AnswerPermission = %+v, %v", p, err)
	}
	var ae *APIError
	if _, err := c.AnswerPermission(ctx, p.ID, message.PermissionAnswer{Behavior: message.BehaviorAllow}); !errors.As(err, &ae) || ae.Status != http.StatusConflict || !strings.Contains(ae.Error(), "token:default") {
		t.Fatalf("second answer: %v, want a 409 naming who answered", err)
	}
	if all, err := c.Permissions(ctx, true); err != nil || len(all) != 2 {
		t.Fatalf("Permissions(all) = %v, %v", all, err)
	}
	if r, err := c.Control(ctx, "bridge:"+remoteSession, message.Control{Kind: message.ControlSetModel, Model: "opus"}); err != nil || !r.Acknowledged || r.Model != "opus" {
		t.Fatalf("Control = %+v, %v", r, err)
	}
	s, err := c.Resolve(ctx, "bridge:"+remoteSession)
	if err != nil || s.Name != "fix-the-bug" {
		t.Fatalf("Resolve = %+v, %v", s, err)
	}
	answers, controls := leg.Answers(), leg.Controls()
	if len(answers) != 1 || answers[0].Message != "not now" || len(controls) != 1 || controls[0].Model != "opus" {
		t.Fatalf("leg got answers %+v controls %+v", answers, controls)
	}
}
