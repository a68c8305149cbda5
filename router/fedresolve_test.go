package router

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
)

// Other hosts' sessions as the federation leg lists them: protocol
// federation, named NAME.HOST, addressed NAME@HOST.
func other(name, host, id string) message.Session {
	return message.Session{Address: name + "@" + host, Protocol: message.ProtocolFederation, Name: name + "." + host, Host: host, SessionID: id, Reachable: true}
}

var (
	hbWork  = other("work", "hb", "hb-work")
	hbBuild = other("build", "hb", "hb-build")
	hcBuild = other("build", "hc", "hc-build")
	hbDup1  = other("dup", "hb", "hb-dup-1")
	hbDup2  = other("dup", "hb", "hb-dup-2")
	hcLone  = other("lone", "hc", "hc-lone")
	solo    = message.Session{Address: "uds:/tmp/qwen-socks-0123456789abcdef/30.sock", Protocol: message.ProtocolQwen, Name: "solo", SessionID: "q-solo", PID: 30}
)

// fedLeg is a federation leg listing ss: it declares that its sessions
// live on other hosts.
func fedLeg(ss ...message.Session) *legtest.Fake {
	f := fake(message.ProtocolFederation, ss...)
	f.Declares = leg.Abilities{OtherHosts: true}
	return f
}

func federatedRouter(t *testing.T) (*Router, *legtest.Fake) {
	t.Helper()
	fed := fedLeg(hbWork, hbBuild, hcBuild, hbDup1, hbDup2, hcLone)
	return start(t, claudeLeg(claudeWork), qwenLeg(solo), fed), fed
}

func ref(s message.Session) string { return addressing.Ref(s.SessionID) }

func TestNamesResolveAcrossHostsLocalFirst(t *testing.T) {
	r, _ := federatedRouter(t)
	tests := []struct {
		name, to string
		want     message.Session
	}{
		{"a local name wins over another host's", "work", claudeWork},
		{"a local ref picks the local session", "[" + ref(claudeWork) + "]", claudeWork},
		{"NAME@HOST picks the other host's session", "work@hb", hbWork},
		{"NAME@HOST matches ignoring case", "WORK@HB", hbWork},
		{"the listed name NAME.HOST picks it", "work.hb", hbWork},
		{"another host's ref picks its session", "[" + ref(hbWork) + "]", hbWork},
		{"a name with another host's ref picks that session over the local one", "work [" + ref(hbWork) + "]", hbWork},
		{"NAME@HOST [ref] picks one of two of a name", "dup@hb [" + ref(hbDup2) + "]", hbDup2},
		{"a bare name only another host has picks it", "lone", hcLone},
		{"NAME@HOST picks one of two hosts' sessions of a name", "build@hc", hcBuild},
		{"a bare name no local session has resolves on the one host that has it", "dup [" + ref(hbDup1) + "]", hbDup1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, s, err := r.Resolve(context.Background(), tt.to)
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.to, err)
			}
			if s.SessionID != tt.want.SessionID || l.Name() != tt.want.Protocol {
				t.Fatalf("Resolve(%q) = %s on %s, want %s", tt.to, s.SessionID, l.Name(), tt.want.SessionID)
			}
		})
	}
}

func TestAmbiguityAcrossHostsListsNAMEatHOSTFormsThatEachResolve(t *testing.T) {
	r, _ := federatedRouter(t)
	tests := []struct {
		name, to string
		want     []message.Session
	}{
		{"a bare name two hosts share", "build", []message.Session{hbBuild, hcBuild}},
		{"a name two sessions of one host share", "dup@hb", []message.Session{hbDup1, hbDup2}},
		{"the listed name two sessions share", "dup.hb", []message.Session{hbDup1, hbDup2}},
		{"the bare name two sessions share", "dup", []message.Session{hbDup1, hbDup2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := r.Resolve(context.Background(), tt.to)
			ambiguity(t, r, err, tt.want...)
			var amb *addressing.AmbiguousError
			errors.As(err, &amb)
			for _, c := range amb.Candidates {
				if a, err := addressing.Parse(c); err != nil || a.Ref == "" || !strings.Contains(a.Name, "@") {
					t.Errorf("candidate %q is not a NAME@HOST [ref] form", c)
				}
			}
		})
	}
}

func TestANameNoHostHasSuggestsOtherHostsSessionsThatResolve(t *testing.T) {
	r, _ := federatedRouter(t)
	_, _, err := r.Resolve(context.Background(), "bui")
	var nf *addressing.NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("err = %v, want not found", err)
	}
	if len(nf.Suggestions) == 0 {
		t.Fatalf("no suggestions: %v", err)
	}
	for _, s := range nf.Suggestions {
		if _, _, err := r.Resolve(context.Background(), s); err != nil {
			t.Errorf("suggestion %q does not resolve: %v", s, err)
		}
	}
}

func TestASendToNAMEatHOSTGoesOverTheFederationLeg(t *testing.T) {
	r, fed := federatedRouter(t)
	if _, err := r.Send(context.Background(), SendRequest{To: "build@hc", Body: "hi"}); err != nil {
		t.Fatal(err)
	}
	if sent := fed.Sent(); len(sent) != 1 || sent[0].To != "build@hc" || sent[0].ToSessionID != hcBuild.SessionID {
		t.Fatalf("the federation leg sent %+v", sent)
	}
}

func TestSessionsCarryThisHostsNameWhenFederated(t *testing.T) {
	fed := fedLeg(hbWork)
	for _, host := range []string{"ha", ""} {
		r := New(Config{Host: host}, claudeLeg(claudeWork), fed)
		for _, s := range r.Sessions(context.Background()) {
			want := host
			if s.Protocol == message.ProtocolFederation {
				want = "hb"
			}
			if s.Host != want {
				t.Errorf("with host %q: %s lists host %q, want %q", host, s.Name, s.Host, want)
			}
		}
	}
}

func TestNAMEatThisHostResolvesToTheLocalSession(t *testing.T) {
	fed := fedLeg(hbWork)
	r := New(Config{Host: "ha"}, claudeLeg(claudeWork), qwenLeg(solo), fed)
	for _, to := range []string{"solo@ha", "solo@ha [" + ref(solo) + "]"} {
		l, s, err := r.Resolve(context.Background(), to)
		if err != nil || s.SessionID != solo.SessionID || l.Name() != message.ProtocolQwen {
			t.Errorf("Resolve(%q) = %+v, %v", to, s, err)
		}
	}
	if _, _, err := r.Resolve(context.Background(), "solo@hz"); err == nil {
		t.Error("NAME@HOST of a host that is not this one resolved locally")
	}
}

// FuzzResolveAcrossHosts resolves any query against a roster holding
// another host's sessions named as that (hostile) host pleases: it never
// panics, and an ambiguity's candidates each resolve.
func FuzzResolveAcrossHosts(f *testing.F) {
	f.Add("build", "build", "hb", "hc", "build")
	f.Add("work", "wörk", "hb", "hb", "work@hb")
	f.Add("x", "x", "hb", "hb", "[5d0d1c]")
	f.Add("a.hb", "a", "hb", "hb", "a.hb")
	f.Fuzz(func(t *testing.T, n1, n2, h1, h2, query string) {
		a, err := addressing.Parse(query)
		if err != nil {
			return
		}
		fed := fedLeg(other(n1, h1, "f-1"), other(n2, h2, "f-2"), other(n1, h2, "f-3"))
		r := New(Config{Host: "ha"}, claudeLeg(claudeWork), fed)
		_, _, err = r.Resolve(context.Background(), a.String())
		var amb *addressing.AmbiguousError
		if errors.As(err, &amb) {
			for _, c := range amb.Candidates {
				if _, _, err := r.Resolve(context.Background(), c); err != nil {
					t.Fatalf("candidate %q of %q does not resolve: %v", c, query, err)
				}
			}
		}
	})
}

// probing lists as the local legs do: each session is probed with the
// caller's context, so a caller gone mid-listing gets none of them, and no
// error.
func probing(f *legtest.Fake, ss ...message.Session) *legtest.Fake {
	f.OnSessions = func(ctx context.Context) ([]message.Session, error) {
		if ctx.Err() != nil {
			return nil, nil
		}
		return ss, nil
	}
	return f
}

func TestAListingCutShortByItsCallerIsNotTheRosterOthersResolveAgainst(t *testing.T) {
	fed := fedLeg(hbWork)
	r := start(t, probing(claudeLeg(), claudeWork), fed)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	r.Sessions(gone)
	_, s, err := r.Resolve(context.Background(), "work")
	if err != nil || s.SessionID != claudeWork.SessionID {
		t.Fatalf("after a cut-short listing, work resolved to %q (%v), want the local %q", s.SessionID, err, claudeWork.SessionID)
	}
}
