package federation

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/federation"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeqwen"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
	"github.com/sessiongateway/gateway/testkit/natscluster"
)

// TestHostsAddressesStatusAndReadinessAsUsersSeeThem runs two hosts, one
// joined through a proxy it is later cut off by, and one publishing only
// some of its sessions.
func TestHostsAddressesStatusAndReadinessAsUsersSeeThem(t *testing.T) {
	c := cluster(t)
	p := natscluster.NewProxy(t, c.URLs())
	a := startHost(t, "a", p.URLs())
	b := startHost(t, "b", c.URLs(), "--federation-publish", "bob*")
	a.claude(t, "alice", message.ModePrompting)
	b.qwen(t, fakeqwen.Config{Name: "hidden"})
	b.qwen(t, fakeqwen.Config{Name: "bob"})
	b.qwen(t, fakeqwen.Config{Name: "bob-twin"})
	b.qwen(t, fakeqwen.Config{Name: "bob-twin"})
	a.waitListed(t, "bob.b")
	b.waitListed(t, "alice.a")

	t.Run("every session carries its host; the unpublished one is not listed", func(t *testing.T) {
		for _, s := range a.G.Listed(t) {
			want := "a"
			if s.Protocol == message.ProtocolFederation {
				want = "b"
			}
			if s.Host != want || strings.HasPrefix(s.Name, "hidden") {
				t.Errorf("a lists %s (%s) with host %q", s.Name, s.Protocol, s.Host)
			}
		}
		table, _, err := a.G.Run(t, "sessions")
		if err != nil || !strings.Contains(table, "HOST") || !strings.Contains(table, "bob@b") {
			t.Fatalf("sessions: %v\n%s", err, table)
		}
	})

	t.Run("NAME@HOST is a send address", func(t *testing.T) {
		o, code := a.G.SendJSON(t, "bob@b", "over there", "--wait", "--timeout", "30s")
		if code != 0 || o.Message.To != "bob@b" || o.Message.Protocol != message.ProtocolFederation || o.Status != message.StatusDelivered {
			t.Fatalf("send bob@b: exit %d, %+v", code, o)
		}
	})

	t.Run("a name two sessions share is answered with candidates that each resolve", func(t *testing.T) {
		testutil.Eventually(t, "a lists both twins", func() bool {
			n := 0
			for _, s := range a.G.Listed(t) {
				if s.Name == "bob-twin.b" {
					n++
				}
			}
			return n == 2
		})
		_, code, err := a.G.Run(t, "send", "bob-twin", "which one?")
		if code == 0 || err == nil {
			t.Fatalf("an ambiguous send went out: exit %d", code)
		}
		_, list, _ := strings.Cut(err.Error(), "candidates:")
		cands := strings.Split(strings.TrimSpace(list), "\n")
		if len(cands) != 2 {
			t.Fatalf("candidates %q in %v", cands, err)
		}
		reached := map[string]bool{}
		for _, c := range cands {
			c = strings.TrimSpace(c)
			if !strings.HasPrefix(c, "bob-twin@b [") {
				t.Errorf("candidate %q is not NAME@HOST [ref]", c)
			}
			if o, code := a.G.SendJSON(t, c, "this one", "--wait", "--timeout", "30s"); code != 0 || o.Message.To != "bob-twin@b" {
				t.Errorf("send %q: exit %d, %+v", c, code, o)
			} else {
				reached[o.Message.ToSessionID] = true
			}
		}
		if len(reached) != 2 {
			t.Fatalf("the candidates reached %v, want both twins", reached)
		}
	})

	t.Run("federation status lists both hosts, the link and the consumers", func(t *testing.T) {
		out, _, err := a.G.Run(t, "federation", "status", "--json")
		if err != nil {
			t.Fatal(err)
		}
		var st federation.Status
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if !st.Enabled || st.Host != "a" || len(st.Hosts) != 2 || !st.Hosts[0].Self || st.Hosts[1].Host != "b" || st.Hosts[1].Sessions != 3 ||
			st.Link == nil || st.Link.State != federation.LinkConnected || len(st.Consumers) != 2 {
			t.Fatalf("status: %s", out)
		}
		table, _, err := b.G.Run(t, "federation", "status")
		if err != nil || !strings.Contains(table, "b (this host)") || !strings.Contains(table, "link: connected") {
			t.Fatalf("status table: %v\n%s", err, table)
		}
	})

	t.Run("readiness fails with the link's reason while cut off, and recovers", func(t *testing.T) {
		p.Cut()
		var msg string
		testutil.EventuallyWithin(t, 30*time.Second, "a is not ready", func() bool {
			_, code, err := a.G.Run(t, "health", "--ready")
			if err != nil {
				msg = err.Error()
			}
			return code != 0
		})
		if !strings.Contains(msg, "federation: link reconnecting (") {
			t.Fatalf("not ready says: %s", msg)
		}
		out, _, _ := a.G.Run(t, "federation", "status", "--json")
		if !strings.Contains(out, `"state": "reconnecting"`) {
			t.Fatalf("status while cut off: %s", out)
		}
		p.Heal()
		testutil.EventuallyWithin(t, 45*time.Second, "a is ready again", func() bool {
			_, code, _ := a.G.Run(t, "health", "--ready")
			return code == 0
		})
	})
}

func TestFederationStatusWithoutFederationSaysSoAndFails(t *testing.T) {
	g := gatewaytest.Start(t, gatewaytest.NewWorld(t), "gw-solo")
	_, code, err := g.Run(t, "federation", "status")
	if code != 1 || err == nil || !strings.Contains(err.Error(), "federation is not enabled") {
		t.Fatalf("exit %d: %v", code, err)
	}
	out, code, _ := g.Run(t, "federation", "status", "--json")
	if code != 1 || strings.Join(strings.Fields(out), "") != `{"enabled":false}` {
		t.Fatalf("exit %d: %s", code, out)
	}
}
