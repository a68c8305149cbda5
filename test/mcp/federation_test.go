package mcp_test

import (
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
	"github.com/sessiongateway/gateway/testkit/natscluster"
)

// An MCP client on one host reaches one on another host by NAME@HOST, and
// the answer comes back to the name it was sent from.
func TestMCPClientsOnTwoHostsReachEachOtherByName(t *testing.T) {
	nc := natscluster.Start(t, natscluster.Options{Nodes: 1})
	wa, wb := gatewaytest.NewWorld(t), gatewaytest.NewWorld(t)
	ga := gatewaytest.Start(t, wa, "gw-a", "--federation", nc.URLs(), "--host", "a")
	gb := gatewaytest.Start(t, wb, "gw-b", "--federation", nc.URLs(), "--host", "b")
	alice := client(t, wa, "alice")
	bob := client(t, wb, "bob")
	var listed message.Session
	testutil.EventuallyWithin(t, 30*time.Second, "host b lists alice.a", func() bool {
		s, ok := gatewaytest.FindSession(gb.Listed(t), "alice.a")
		listed = s
		return ok
	})
	if listed.Host != "a" {
		t.Fatalf("alice.a listed as %+v", listed)
	}
	testutil.EventuallyWithin(t, 30*time.Second, "host a lists bob.b", func() bool {
		_, ok := gatewaytest.FindSession(ga.Listed(t), "bob.b")
		return ok
	})

	var st status
	call(t, bob, "send_message", map[string]any{"to": "alice@a", "text": "hello from b"}, &st)
	var in inbox
	call(t, alice, "wait_for_messages", map[string]any{"timeout_seconds": 60}, &in)
	if len(in.Messages) != 1 || in.Messages[0].Text != "hello from b" || in.Messages[0].From != "bob.b" {
		t.Fatalf("alice read %+v", in)
	}
	call(t, alice, "send_message", map[string]any{"to": in.Messages[0].From, "text": "hello back"}, &st)
	call(t, bob, "wait_for_messages", map[string]any{"timeout_seconds": 60}, &in)
	if len(in.Messages) != 1 || in.Messages[0].Text != "hello back" || in.Messages[0].From != "alice.a" {
		t.Fatalf("bob read %+v", in)
	}
}
