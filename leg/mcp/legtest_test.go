package mcp_test

import (
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/leg/mcp"
	"github.com/sessiongateway/gateway/message"
)

// The MCP leg keeps the Leg contract, with one client connected; that
// client's message to a local session is Run's event.
func TestMCPLegKeepsTheLegContract(t *testing.T) {
	legtest.Run(t, func(t *testing.T) legtest.Subject {
		l := mcp.NewLeg(nil)
		me, err := l.Join("reader", "test", nil)
		if err != nil {
			t.Fatal(err)
		}
		target := message.Session{Address: "uds:/tmp/cc-socks/12.sock", Protocol: message.ProtocolClaude, Name: "review", SessionID: "s-review"}
		return legtest.Subject{Leg: l, Unknown: mcp.AddressPrefix + "nobody", Inbound: func(t *testing.T) {
			// Run may not have its channel yet: a send before it is refused.
			var err error
			if !testutil.Within(10*time.Second, func() bool {
				_, err = l.Submit(testutil.Context(t, 10*time.Second), me, target, "hello")
				return err == nil
			}) {
				t.Fatalf("the client's message was not taken: %v", err)
			}
		}}
	})
}
