package mcp

import (
	"context"
	"testing"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
)

// starterLeg is a leg that starts sessions, recording what it was asked.
type starterLeg struct {
	*legtest.Fake
	asked []message.StartSpec
}

func (l *starterLeg) Start(_ context.Context, spec message.StartSpec) (message.Session, error) {
	l.asked = append(l.asked, spec)
	return message.Session{Address: "hosted:" + spec.Name, Protocol: message.ProtocolHosted, Name: spec.Name, Kind: spec.Agent, Cwd: spec.Cwd}, nil
}

func (l *starterLeg) Stop(context.Context, message.Session) error { return nil }

func TestStartSessionStartsAHostedSessionAsAsked(t *testing.T) {
	l := &starterLeg{Fake: legtest.New(message.ProtocolHosted)}
	w := newWorld(t, l)
	cs := w.connect(t, "planner", api.AllScopes)
	var out struct {
		Session message.Session `json:"session"`
	}
	mustCall(t, cs, "start_session", map[string]any{"agent": "claude", "cwd": "/work/api", "name": "api", "prompt": "run the tests",
		"permission_mode": "plan", "model": "opus"}, &out)
	want := message.StartSpec{Agent: "claude", Cwd: "/work/api", Name: "api", Prompt: "run the tests", PermissionMode: "plan", Model: "opus"}
	if len(l.asked) != 1 || l.asked[0] != want || out.Session.Address != "hosted:api" {
		t.Fatalf("asked %+v, answered %+v", l.asked, out.Session)
	}
}
