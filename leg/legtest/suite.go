package legtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// Subject is one leg set up for the suite, with one reachable session.
type Subject struct {
	Leg leg.Leg
	// Inbound makes the reachable session send the leg something while
	// Run runs, so Run has an event to deliver; nil for a leg whose
	// sessions the suite cannot make speak (its Run checks then see no
	// event).
	Inbound func(t *testing.T)
	// Unknown is an address in the leg's own spelling that no session
	// answers at; empty: a socket path that does not exist.
	Unknown string
	// Foreign names the packages (import path prefixes) of servers the
	// factory runs in the test's process, whose goroutines the leg's
	// connections start and which are not the leg's to stop.
	Foreign []string
}

// Factory sets up a fresh leg for one check; its cleanups stop what it
// started.
type Factory func(t *testing.T) Subject

// stopWithin bounds how long Run may take to return once its context ends.
const stopWithin = 10 * time.Second

// Run checks the Leg contract of leg/leg.go on legs made by factory: each
// check gets a leg of its own.
func Run(t *testing.T, factory Factory) {
	t.Helper()
	checks := []struct {
		name  string
		check func(t *testing.T, s Subject)
	}{
		{"Name is stable and non-empty", nameIsStable},
		{"Sessions lists a reachable session, each of the leg's protocol", sessionsAreTheLegs},
		{"Send to a listed session returns a first receipt for that message: sent or failed (queued from a leg that keeps it)", sendToListed},
		{"Send to an unknown address is a failed receipt or an error (or kept, queued), never a panic", sendToUnknown},
		{"Run delivers events stamped with the leg", runStampsEvents},
		{"Run returns soon after its context ends, every goroutine it started stopped", runStops},
		{"Run's channel gets nothing once Run has returned", nothingAfterRun},
		{"each ability the leg declares behaves as leg/leg.go says", abilities},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) { c.check(t, factory(t)) })
	}
}

func nameIsStable(t *testing.T, s Subject) {
	running(t, s.Leg)
	n := s.Leg.Name()
	if n == "" {
		t.Fatal("Name is empty")
	}
	if again := s.Leg.Name(); again != n {
		t.Fatalf("Name said %q, then %q", n, again)
	}
}

// reachable is a listed session the leg says it reaches, failing the test
// when none is listed within testutil.Patience (a leg learns its roster
// in the background).
func reachable(t *testing.T, l leg.Leg) message.Session {
	t.Helper()
	var found message.Session
	var last error
	ok := testutil.Within(testutil.Patience, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), testutil.Patience)
		defer cancel()
		ss, err := l.Sessions(ctx)
		last = err
		for _, s := range ss {
			if s.Reachable {
				found = s
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("Sessions listed no reachable session within %v (last error: %v)", testutil.Patience, last)
	}
	return found
}

func sessionsAreTheLegs(t *testing.T, s Subject) {
	running(t, s.Leg)
	reachable(t, s.Leg)
	ss, err := s.Leg.Sessions(testutil.Context(t, testutil.Patience))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ss {
		if x.Protocol != s.Leg.Name() {
			t.Errorf("session %s is listed with protocol %q by the %q leg", x.Address, x.Protocol, s.Leg.Name())
		}
		if x.Address == "" {
			t.Errorf("session %+v has no address", x)
		}
	}
}

// running runs the leg's Run for the rest of the test, returning its
// channel; the cleanup stops it and fails the test if it does not return.
func running(t *testing.T, l leg.Leg) <-chan message.Event {
	t.Helper()
	in := make(chan message.Event, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, in) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(stopWithin):
			t.Errorf("Run did not return within %v of its context ending", stopWithin)
		}
	})
	return in
}

func probe(to string) message.Message {
	return message.Message{ID: fmt.Sprintf("legtest-%d", time.Now().UnixNano()), To: to, Body: "legtest probe",
		From: "uds:/tmp/legtest/sender.sock", FromName: "legtest", Mode: message.ModePrompting}
}

func sendToListed(t *testing.T, s Subject) {
	running(t, s.Leg)
	target := reachable(t, s.Leg)
	m := probe(target.Address)
	m.Protocol = s.Leg.Name()
	rc, err := s.Leg.Send(testutil.Context(t, testutil.Patience), m)
	if err != nil {
		t.Fatalf("Send to %s: %v", target.Address, err)
	}
	if rc.MsgID != m.ID {
		t.Errorf("the receipt is for %q, want %q", rc.MsgID, m.ID)
	}
	if !firstStatus(s.Leg, rc.Status) {
		t.Errorf("the first receipt is %q, want sent or failed (or queued, from a leg that keeps what it takes)", rc.Status)
	}
}

// firstStatus reports whether st may be a leg's first receipt: sent or
// failed, or queued from a leg that keeps what it takes (a Recaller, the
// durable outbox), whose outcome comes later.
func firstStatus(l leg.Leg, st message.Status) bool {
	_, keeps := l.(leg.Recaller)
	return st == message.StatusSent || st == message.StatusFailed || keeps && st == message.StatusQueued
}

func sendToUnknown(t *testing.T, s Subject) {
	running(t, s.Leg)
	to := s.Unknown
	if to == "" {
		to = "uds:" + testutil.ShortTempDir(t) + "/nobody.sock"
	}
	m := probe(to)
	m.Protocol = s.Leg.Name()
	var rc message.Receipt
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("Send to %s panicked: %v", to, p)
			}
		}()
		rc, err = s.Leg.Send(testutil.Context(t, testutil.Patience), m)
	}()
	if err != nil {
		return
	}
	if rc.MsgID != m.ID {
		t.Errorf("the receipt is for %q, want %q", rc.MsgID, m.ID)
	}
	if kl, keeps := s.Leg.(leg.Recaller); keeps && rc.Status == message.StatusQueued {
		// A leg that keeps what it takes learns of the address later; it
		// must at least still know the message.
		if _, _, found := kl.Recall(m.ID); !found {
			t.Fatalf("Send to %s was queued, and then the leg does not recall it", to)
		}
		return
	}
	if rc.Status != message.StatusFailed {
		t.Fatalf("Send to %s = %+v with no error, want a failed receipt or an error", to, rc)
	}
}

func runStampsEvents(t *testing.T, s Subject) {
	if s.Inbound == nil {
		t.Skip("the factory cannot make its session send the leg anything")
	}
	in := running(t, s.Leg)
	reachable(t, s.Leg)
	s.Inbound(t)
	select {
	case ev := <-in:
		if ev.Leg != s.Leg.Name() {
			t.Fatalf("an event of type %q came stamped with leg %q, want %q", ev.Type, ev.Leg, s.Leg.Name())
		}
		if ev.Type == "" {
			t.Fatalf("an event came with no type: %+v", ev)
		}
	case <-time.After(testutil.Patience):
		t.Fatalf("no event within %v of the session sending", testutil.Patience)
	}
}

func runStops(t *testing.T, s Subject) {
	reachable(t, s.Leg)
	// What the factory started (servers, fakes) is not Run's to stop.
	before := goroutines()
	in := make(chan message.Event, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Leg.Run(ctx, in) }()
	if s.Inbound != nil {
		s.Inbound(t)
	}
	time.Sleep(20 * time.Millisecond) // let Run start what it starts
	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v as its context ended, want nil or context.Canceled", err)
		}
	case <-time.After(stopWithin):
		t.Fatalf("Run did not return within %v of its context ending", stopWithin)
	}
	if left := leftBehind(before, s.Foreign, stopWithin); len(left) > 0 {
		t.Fatalf("%d goroutines still running %v after Run returned:\n%s", len(left), stopWithin, strings.Join(left, "\n\n"))
	}
}

func nothingAfterRun(t *testing.T, s Subject) {
	reachable(t, s.Leg)
	in := make(chan message.Event, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Leg.Run(ctx, in) }()
	if s.Inbound != nil {
		s.Inbound(t)
		select {
		case <-in:
		case <-time.After(testutil.Patience):
			t.Fatalf("no event within %v of the session sending", testutil.Patience)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(stopWithin):
		t.Fatalf("Run did not return within %v of its context ending", stopWithin)
	}
	for len(in) > 0 {
		<-in // handed on before Run returned
	}
	select { // a late timer or goroutine of the leg's would show here
	case ev := <-in:
		t.Fatalf("an event of type %q reached the channel after Run returned", ev.Type)
	case <-time.After(100 * time.Millisecond):
	}
}

func abilities(t *testing.T, s Subject) {
	running(t, s.Leg)
	reachable(t, s.Leg)
	ctx := testutil.Context(t, testutil.Patience)
	none := message.Session{Address: "uds:/nonexistent/legtest.sock", Protocol: s.Leg.Name(), SessionID: "legtest-nobody"}
	l := s.Leg
	if c, ok := l.(leg.Claimer); ok {
		t.Run("a Claimer claims no empty address", func(t *testing.T) {
			if c.Claims(addressing.Address{}) {
				t.Fatal("Claims(the zero address) = true")
			}
		})
	}
	if st, ok := l.(leg.Settler); ok {
		t.Run("a Settler's settle window is positive", func(t *testing.T) {
			if d := st.Settle(); d <= 0 {
				t.Fatalf("Settle() = %v", d)
			}
		})
	}
	if h, ok := l.(leg.Holder); ok {
		t.Run("a Holder refuses to decide a message it does not hold", func(t *testing.T) {
			for _, x := range h.Held() {
				if x.Message.ID == "legtest-never-held" {
					t.Fatal("holds a message nobody sent")
				}
			}
			if err := h.Decide(ctx, "legtest-never-held", true, ""); err == nil {
				t.Fatal("Decide of an id it does not hold succeeded")
			}
		})
	}
	if al, ok := l.(leg.AliasLister); ok {
		t.Run("an AliasLister lists aliases that say whom they stand for", func(t *testing.T) {
			for _, a := range al.Aliases() {
				if a.AliasOf == "" || a.Kind == "" {
					t.Errorf("alias %+v: want AliasOf and Kind set", a)
				}
			}
		})
	}
	if ah, ok := l.(leg.AliasHost); ok {
		t.Run("an AliasHost takes an empty set of aliases", func(t *testing.T) {
			if err := ah.SyncAliases(ctx, nil); err != nil {
				t.Fatalf("SyncAliases(none): %v", err)
			}
		})
	}
	if d, ok := l.(leg.Describer); ok {
		t.Run("a Describer says it does not know an unknown session", func(t *testing.T) {
			// A wrapper (the outbox) whose inner leg lacks the ability
			// says so instead.
			_, err := d.Info(ctx, none)
			if nf := (*addressing.NotFoundError)(nil); !errors.As(err, &nf) && !errors.Is(err, message.ErrNotControllable) {
				t.Fatalf("Info(unknown) error = %v, want an *addressing.NotFoundError", err)
			}
		})
	}
	if c, ok := l.(leg.Controllable); ok {
		t.Run("a Controllable does not control an unknown session", func(t *testing.T) {
			if _, err := c.Control(ctx, none, message.Control{Kind: message.ControlInterrupt}); err == nil {
				t.Fatal("Control of an unknown session succeeded")
			}
		})
	}
	if rc, ok := l.(leg.Recaller); ok {
		t.Run("a Recaller recalls nothing it never took", func(t *testing.T) {
			if _, _, found := rc.Recall("legtest-never-sent"); found {
				t.Fatal("recalled a message never sent")
			}
		})
	}
	if rs, ok := l.(leg.Resumer); ok {
		t.Run("a Resumer resumes only messages with ids", func(t *testing.T) {
			for _, m := range rs.Resumed() {
				if m.ID == "" {
					t.Errorf("resumed a message with no id: %+v", m)
				}
			}
		})
	}
	if rd, ok := l.(leg.Readier); ok {
		t.Run("a Readier answers at once", func(t *testing.T) {
			answered := make(chan struct{})
			go func() { _ = rd.Ready(); close(answered) }()
			select {
			case <-answered:
			case <-time.After(stopWithin):
				t.Fatalf("Ready did not answer within %v", stopWithin)
			}
		})
	}
}
