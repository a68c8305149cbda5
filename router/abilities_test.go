package router

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
)

// The router learns what a leg can do from what it declares, never from
// its name: each case runs a leg under a name that ability is not known
// by, with and without declaring it, and a leg under the name it is known
// by that does not declare it.

func TestALegOnOtherHostsIsKnownByWhatItDeclares(t *testing.T) {
	// An other host's session named as a local one is; and one with no
	// host, which the router would stamp as this host's.
	far := message.Session{Address: "work@hb", Protocol: message.ProtocolQwen, Name: "work", SessionID: "hb-work", Reachable: true}
	bare := message.Session{Address: "bare@hb", Protocol: message.ProtocolQwen, Name: "bare", SessionID: "hb-bare"}
	tests := []struct {
		name      string
		leg       message.Protocol
		declares  leg.Abilities
		elsewhere bool
	}{
		{"a leg not named federation that declares other hosts is resolved after local ones", message.ProtocolQwen, leg.Abilities{OtherHosts: true}, true},
		{"a leg not named federation that declares nothing is local", message.ProtocolQwen, leg.Abilities{}, false},
		{"a leg named federation that declares nothing is local", message.ProtocolFederation, leg.Abilities{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, b := far, bare
			f.Protocol, b.Protocol = tt.leg, tt.leg
			other := fake(tt.leg, f, b)
			other.Declares = tt.declares
			r := New(Config{Host: "ha"}, claudeLeg(claudeWork), other)
			l, s, err := r.Resolve(context.Background(), "work")
			var amb *addressing.AmbiguousError
			switch {
			case tt.elsewhere && (err != nil || s.SessionID != claudeWork.SessionID || l.Name() != message.ProtocolClaude):
				t.Errorf("work resolved to %+v, %v; want the local session first", s, err)
			case !tt.elsewhere && !errors.As(err, &amb):
				t.Errorf("work resolved to %+v, %v; want two local sessions of the name, ambiguous", s, err)
			}
			for _, s := range r.Sessions(context.Background()) {
				if s.SessionID != bare.SessionID {
					continue
				}
				if want := map[bool]string{true: "", false: "ha"}[tt.elsewhere]; s.Host != want {
					t.Errorf("a session listed with no host has host %q, want %q", s.Host, want)
				}
			}
		})
	}
}

func TestALegAnswersForANameThatLeftOnlyWhenItSaysSo(t *testing.T) {
	tests := []struct {
		name     string
		leg      message.Protocol
		declares leg.Abilities
		claimed  bool
	}{
		{"a leg not named mcp that declares it is asked about names", message.ProtocolQwen, leg.Abilities{ClaimsLeftNames: true}, true},
		{"a leg not named mcp that declares nothing is not asked", message.ProtocolQwen, leg.Abilities{}, false},
		{"a leg named mcp that declares nothing is not asked", message.ProtocolMCP, leg.Abilities{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// It answers for one name no session of its roster has.
			cl := fake(tt.leg)
			cl.Declares = tt.declares
			cl.OnClaims = func(a addressing.Address) bool { return a.Kind == addressing.KindName && a.Name == "gone" }
			r := New(Config{}, claudeLeg(claudeWork), cl)
			l, s, err := r.Resolve(context.Background(), "gone")
			var nf *addressing.NotFoundError
			switch {
			case tt.claimed && (err != nil || l.Name() != tt.leg || s.Name != "gone"):
				t.Errorf("gone resolved to %+v, %v; want the leg that answers for it", s, err)
			case !tt.claimed && !errors.As(err, &nf):
				t.Errorf("gone resolved to %+v on %v, %v; want not found", s, l, err)
			}
		})
	}
}

func TestABridgeAddressSkipsTheSessionsOfALegOfCloudSessions(t *testing.T) {
	local := message.Session{Address: "uds:/tmp/cc-socks/40.sock", Protocol: message.ProtocolClaude, Name: "signed-in", SessionID: "c-40", PID: 40, BridgeSessionID: "session_01"}
	tests := []struct {
		name     string
		leg      message.Protocol
		declares leg.Abilities
		local    bool
	}{
		{"a leg not named remote that declares cloud sessions is not the local match", message.ProtocolQwen, leg.Abilities{CloudSessions: true}, true},
		{"a leg not named remote that declares nothing is a second local match", message.ProtocolQwen, leg.Abilities{}, false},
		{"a leg named remote that declares nothing is a second local match", message.ProtocolRemote, leg.Abilities{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cloud := message.Session{Address: "bridge:session_01", Protocol: tt.leg, Name: "cloud", SessionID: "session_01", BridgeSessionID: "session_01"}
			other := fake(tt.leg, cloud)
			other.Declares = tt.declares
			r := New(Config{}, claudeLeg(local), other)
			l, s, err := r.Resolve(context.Background(), "bridge:session_01")
			var amb *addressing.AmbiguousError
			switch {
			case tt.local && (err != nil || s.SessionID != local.SessionID || l.Name() != message.ProtocolClaude):
				t.Errorf("bridge:session_01 resolved to %+v, %v; want the local session over its socket", s, err)
			case !tt.local && !errors.As(err, &amb):
				t.Errorf("bridge:session_01 resolved to %+v, %v; want two local matches, ambiguous", s, err)
			}
		})
	}
}

func TestALegsOwnSendsTakeTheBridgeWhenItSaysSo(t *testing.T) {
	tests := []struct {
		name     string
		leg      message.Protocol
		declares leg.Abilities
		bridged  bool
	}{
		{"a leg not named mcp that declares it is bridged with the bridge off", message.ProtocolQwen, leg.Abilities{BridgesOwnSends: true}, true},
		{"a leg not named mcp that declares nothing is not", message.ProtocolQwen, leg.Abilities{}, false},
		{"a leg named mcp that declares nothing is not", message.ProtocolMCP, leg.Abilities{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, dst := fake(tt.leg), claudeLeg(claudeWork)
			src.Declares = tt.declares
			r := New(Config{BridgeInterval: time.Hour}, host(src), host(dst))
			m := message.Message{ID: "m1", From: "client-1", FromName: "client", Body: "hi", Mode: message.ModePrompting,
				Protocol: tt.leg, AliasOf: claudeWork.Address, ToName: "work"}
			r.handle(context.Background(), message.Event{Type: message.EventMessage, Leg: tt.leg, Message: &m})
			r.bg.Wait()
			if got := len(dst.Sent()) + len(dst.SentAs()); (got == 1) != tt.bridged || got > 1 {
				t.Errorf("the target leg was sent %d messages, want bridged %v", got, tt.bridged)
			}
		})
	}
}

// failingLifecycler creates no session and lists no environment: the
// shared fake has no Lifecycler of its own.
type failingLifecycler struct{ *legtest.Fake }

var errRefused = errors.New("refused")

func (failingLifecycler) Create(context.Context, message.NewRemoteSession) (message.Session, error) {
	return message.Session{}, errRefused
}
func (failingLifecycler) Retitle(context.Context, message.Session, string) (message.Session, error) {
	return message.Session{}, errRefused
}
func (failingLifecycler) Archive(context.Context, message.Session) (message.Session, error) {
	return message.Session{}, errRefused
}
func (failingLifecycler) Environments(context.Context) ([]message.Environment, error) {
	return nil, errRefused
}

func TestALifecycleErrorNamesTheLegThatCreatesSessions(t *testing.T) {
	r := New(Config{}, claudeLeg(claudeWork), failingLifecycler{qwenLeg()})
	_, err := r.Environments(context.Background())
	var le *LegError
	if !errors.As(err, &le) || le.Leg != message.ProtocolQwen || !errors.Is(err, errRefused) {
		t.Fatalf("Environments: %v, want the qwen leg's refusal", err)
	}
	_, err = r.CreateSession(context.Background(), message.NewRemoteSession{EnvironmentID: "env_1", Body: "hi"})
	if !errors.As(err, &le) || le.Leg != message.ProtocolQwen || le.Op != "create" {
		t.Fatalf("CreateSession: %v, want the qwen leg's refusal", err)
	}
}

// declaring is a prompt leg that declares abilities.
type declaring struct {
	*legtest.PromptLeg
	a leg.Abilities
}

func (d declaring) Abilities() leg.Abilities { return d.a }

func TestAWithdrawnPromptComesBackOnlyFromALegThatSaysItMay(t *testing.T) {
	tests := []struct {
		name     string
		declares leg.Abilities
		back     bool
	}{
		{"a leg that declares it re-raises withdrawn prompts gets one back as pending", leg.Abilities{ReraisesCancelled: true}, true},
		{"a leg that declares nothing does not: a repeat of a settled prompt is ignored", leg.Abilities{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := legtest.NewPromptLeg()
			r := start(t, declaring{pl, tt.declares})
			feed(t, r, pl, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`), legtest.Withdraw(legtest.SessionID, "r1"))
			again := feed(t, r, pl, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`))
			switch {
			case tt.back && (len(again) != 1 || again[0].Permission.State != message.PermissionPending):
				t.Fatalf("raised again after its withdrawal: published %+v, want it pending", again)
			case !tt.back && len(again) != 0:
				t.Fatalf("raised again after its withdrawal: published %+v, want nothing", again)
			}
		})
	}
}
