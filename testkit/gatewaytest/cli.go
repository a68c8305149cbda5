package gatewaytest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// Listed is what `gateway sessions --json` prints.
func (g *Gateway) Listed(tb testing.TB) []message.Session {
	tb.Helper()
	out, _, err := g.Run(tb, "sessions", "--json")
	if err != nil {
		tb.Fatal(err)
	}
	var ss []message.Session
	if err := json.Unmarshal([]byte(out), &ss); err != nil {
		tb.Fatalf("sessions --json: %v\n%s", err, out)
	}
	return ss
}

// FindSession returns the first session named name.
func FindSession(ss []message.Session, name string) (message.Session, bool) {
	for _, s := range ss {
		if s.Name == name {
			return s, true
		}
	}
	return message.Session{}, false
}

// WaitListed waits until `gateway sessions` lists a session named name.
func (g *Gateway) WaitListed(tb testing.TB, name string) message.Session {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ss := g.Listed(tb)
		if s, ok := FindSession(ss, name); ok {
			return s
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the gateway never listed %q: %+v", name, ss)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SendJSON runs `gateway send --json args...` and returns the outbound it
// printed and the exit code; an exit other than 0, 3 (not delivered) or 4
// (not final) fails the test.
func (g *Gateway) SendJSON(tb testing.TB, args ...string) (router.Outbound, int) {
	tb.Helper()
	out, code, err := g.Run(tb, append([]string{"send", "--json"}, args...)...)
	if err != nil && code != 3 && code != 4 {
		tb.Fatal(err)
	}
	var o router.Outbound
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		tb.Fatalf("send --json printed %q: %v", out, err)
	}
	return o, code
}

// MessageState reads a sent message's state through the control API.
func (g *Gateway) MessageState(tb testing.TB, id string) router.Outbound {
	tb.Helper()
	o, err := g.Message(testutil.Context(tb, 10*time.Second), id)
	if err != nil {
		tb.Fatal(err)
	}
	return o
}

// WaitStatus waits until the sent message id has a receipt and satisfies ok.
func (g *Gateway) WaitStatus(tb testing.TB, id string, ok func(router.Outbound) bool) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		o := g.MessageState(tb, id)
		if len(o.Receipts) > 0 && ok(o) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("message %s: status %v, receipts %+v", id, o.Status, o.Receipts)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// LastReceipt is the newest receipt of o; the test fails when there is none.
func LastReceipt(tb testing.TB, o router.Outbound) message.Receipt {
	tb.Helper()
	if len(o.Receipts) == 0 {
		tb.Fatalf("message %s has no receipt (status %v)", o.Message.ID, o.Status)
	}
	return o.Receipts[len(o.Receipts)-1]
}
