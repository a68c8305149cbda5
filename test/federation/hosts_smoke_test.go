package federation

import (
	"testing"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeqwen"
)

func TestEachHostListsTheOthersSessionsWithTheirHost(t *testing.T) {
	c := cluster(t)
	a := startHost(t, "a", c.URLs())
	b := startHost(t, "b", c.URL(2)+","+c.URL(1))
	a.claude(t, "alice", message.ModePrompting)
	b.qwen(t, fakeqwen.Config{Name: "bob"})

	got := a.waitListed(t, "bob.b")
	if got.Host != "b" || got.Address != "bob@b" || got.Protocol != message.ProtocolFederation {
		t.Fatalf("a lists bob.b as %+v", got)
	}
	got = b.waitListed(t, "alice.a")
	if got.Host != "a" || got.Address != "alice@a" {
		t.Fatalf("b lists alice.a as %+v", got)
	}
}
