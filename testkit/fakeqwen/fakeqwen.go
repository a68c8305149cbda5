package fakeqwen

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/message"
)

// Config places the fake session.
type Config struct {
	Name       string
	Home       string       // the Qwen home its record goes in (sessions/ below it)
	RuntimeDir string       // XDG_RUNTIME_DIR for its inbox
	TmpDir     string       // Node's temp dir stand-in; default a test temp dir
	Mode       message.Mode // review class for mode parity; default prompting
	Inbound    qwen.Policy  // crossSessionInbound; unset is mode parity
	Limits     qwen.Limits  // its inbox's admission limits; zero fields are Qwen Code's
}

// Peer is a running fake session. Its events (messages that reached it,
// receipts for what it sent, held messages) are in Events.
type Peer struct {
	*qwen.Leg
	events chan message.Event
}

// Start registers the fake and runs its inbox until the test ends.
func Start(tb testing.TB, cfg Config) *Peer {
	tb.Helper()
	if cfg.TmpDir == "" {
		cfg.TmpDir = tb.TempDir()
	}
	p, err := qwen.Register(qwen.Config{Name: cfg.Name, Home: cfg.Home, RuntimeDir: cfg.RuntimeDir,
		TmpDir: cfg.TmpDir, Mode: cfg.Mode, Inbound: cfg.Inbound, Limits: cfg.Limits})
	if err != nil {
		tb.Fatalf("fakeqwen: %v", err)
	}
	f := &Peer{Leg: p, events: make(chan message.Event, 256)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, f.events) }()
	tb.Cleanup(func() { cancel(); <-done })
	return f
}

// Events is what reached the fake, in order. Full, the leg waits: tests
// that ignore events should not send it more than the buffer holds (256).
func (f *Peer) Events() <-chan message.Event { return f.events }

// Address is the fake's inbox address, as `gateway sessions` lists it.
func (f *Peer) Address() string { return addressing.UDS(f.SocketPath()) }

// ErrTimeout is returned by Wait when nothing matched in time.
var ErrTimeout = errors.New("fakeqwen: no matching event in time")

// Wait returns the first event that matches pred, skipping others, or
// ErrTimeout after d.
func (f *Peer) Wait(ctx context.Context, d time.Duration, pred func(message.Event) bool) (message.Event, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case ev := <-f.events:
			if pred(ev) {
				return ev, nil
			}
		case <-t.C:
			return message.Event{}, ErrTimeout
		case <-ctx.Done():
			return message.Event{}, ctx.Err()
		}
	}
}
