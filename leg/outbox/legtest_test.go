package outbox_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/leg/outbox"
	"github.com/sessiongateway/gateway/message"
)

// The outbox keeps the Leg contract around the shared fake leg, with one
// remote session the fake reaches.
func TestOutboxKeepsTheLegContract(t *testing.T) {
	legtest.Run(t, func(t *testing.T) legtest.Subject {
		cloud := message.Session{Address: "bridge:session_01legtest", Protocol: message.ProtocolRemote, Name: "cloud",
			SessionID: "session_01legtest", Reachable: true}
		inner := legtest.New(message.ProtocolRemote, cloud)
		inner.OnSend = func(_ context.Context, m message.Message) (message.Receipt, error) {
			if m.To != cloud.Address {
				return message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Reason: "no such session"}, nil
			}
			return message.Receipt{MsgID: m.ID, Status: message.StatusSent}, nil
		}
		st, err := outbox.Open(filepath.Join(testutil.ShortTempDir(t), outbox.FileName), outbox.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		l, err := outbox.New(inner, outbox.Config{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		return legtest.Subject{Leg: l, Unknown: "bridge:session_01nobody", Inbound: func(t *testing.T) {
			inner.Emit(t, message.Event{Type: message.EventRemote, Remote: &message.RemoteEvent{
				SessionID: cloud.SessionID, Address: cloud.Address, Kind: "assistant", Text: "hello", Final: true}})
		}}
	})
}
