package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/leg/outbox"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
	"github.com/sessiongateway/gateway/testkit/clock"
)

// Every goroutine Run starts has stopped when it returns.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds how long a test waits for something that should happen
// soon; it catches hangs and is never a claim about speed.
const wait = 10 * time.Second

// innerLeg is the leg the outbox wraps (fake): it answers each Send by
// script and records what it was asked, and whether a target was asked
// twice at once.
type innerLeg struct {
	fake   *legtest.Fake
	script func(m message.Message, call int) (message.Receipt, error) // call counts from 1 per message id
	hold   map[string]chan struct{}                                   // a Send to this target waits until it is closed
	echo   bool                                                       // Run reports delivered after each sent, as the remote leg does

	called chan message.Message
	echoes sync.WaitGroup

	mu      sync.Mutex
	perID   map[string]int
	busy    map[string]bool
	overlap []string
	in      chan<- message.Event
	runCtx  context.Context
	stopped bool
}

func newInner(script func(m message.Message, call int) (message.Receipt, error)) *innerLeg {
	f := &innerLeg{script: script, called: make(chan message.Message, 1000),
		perID: map[string]int{}, busy: map[string]bool{}, hold: map[string]chan struct{}{},
		fake: legtest.New(message.ProtocolRemote,
			message.Session{Address: "bridge:s1", Protocol: message.ProtocolRemote, Name: "one", SessionID: "s1", Reachable: true},
			message.Session{Address: "bridge:s2", Protocol: message.ProtocolRemote, Name: "two", SessionID: "s2", Reachable: true})}
	f.fake.OnSend, f.fake.OnRun = f.send, f.run
	return f
}

func (f *innerLeg) send(ctx context.Context, m message.Message) (message.Receipt, error) {
	f.mu.Lock()
	if f.busy[m.To] {
		f.overlap = append(f.overlap, m.To)
	}
	f.busy[m.To] = true
	f.perID[m.ID]++
	call := f.perID[m.ID]
	hold := f.hold[m.To]
	f.mu.Unlock()
	f.called <- m
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
		}
	}
	rc, err := f.script(m, call)
	f.mu.Lock()
	f.busy[m.To] = false
	if f.echo && err == nil && rc.Status == message.StatusSent && f.in != nil && !f.stopped {
		// Later, as the server's echo comes: it may overtake the sent.
		in, runCtx := f.in, f.runCtx
		f.echoes.Go(func() {
			select {
			case in <- message.Event{Type: message.EventReceipt, Receipt: &message.Receipt{MsgID: m.ID, Status: message.StatusDelivered}}:
			case <-runCtx.Done():
			}
		})
	}
	f.mu.Unlock()
	return rc, err
}

func (f *innerLeg) run(ctx context.Context, in chan<- message.Event) error {
	f.mu.Lock()
	f.in, f.runCtx = in, ctx
	f.mu.Unlock()
	<-ctx.Done()
	f.mu.Lock()
	f.stopped = true // no echo starts after this
	f.mu.Unlock()
	f.echoes.Wait()
	return ctx.Err()
}

func (f *innerLeg) ids() []string {
	var out []string
	for _, m := range f.fake.Sent() {
		out = append(out, m.ID)
	}
	return out
}

func (f *innerLeg) messages() []message.Message { return f.fake.Sent() }

func (f *innerLeg) overlaps() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.overlap)
}

func (f *innerLeg) count(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.perID[id]
}

func sent(m message.Message, _ int) (message.Receipt, error) {
	return message.Receipt{MsgID: m.ID, Status: message.StatusSent, Detail: "accepted by the server"}, nil
}

func unavailable(m message.Message, _ int) (message.Receipt, error) {
	return message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Reason: "HTTP 503 api_error"}, nil
}

var errRefused = errors.New("session not found")

// harness runs an outbox.Leg over an innerLeg on a fake clock.
type harness struct {
	t      *testing.T
	clock  *clock.FakeClock
	store  *outbox.Store
	inner  *innerLeg
	leg    *outbox.Leg
	cfg    outbox.Config
	events chan message.Event
	cancel context.CancelFunc
	done   chan error
}

func newHarness(t *testing.T, dir string, inner *innerLeg, o outbox.Options, cfg outbox.Config) *harness {
	t.Helper()
	h := &harness{t: t, clock: clock.NewFakeClock(time.Time{}), inner: inner, events: make(chan message.Event, 64)}
	o.Now = h.clock.Now
	s, err := outbox.Open(filepath.Join(dir, outbox.FileName), o)
	if err != nil {
		t.Fatal(err)
	}
	h.store = s
	cfg.Store, cfg.Clock = s, h.clock
	if cfg.MaxInterval == 0 {
		cfg.InitialInterval, cfg.MaxInterval = time.Second, 10*time.Second
	}
	if cfg.Permanent == nil {
		cfg.Permanent = func(err error) bool { return errors.Is(err, errRefused) }
	}
	h.cfg = cfg
	if h.leg, err = outbox.New(inner.fake, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.stop(); s.Close() })
	return h
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.leg.Run(ctx, h.events) }()
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	if err := <-h.done; err != nil && !errors.Is(err, context.Canceled) {
		h.t.Errorf("Run: %v", err)
	}
}

func (h *harness) send(m message.Message) message.Receipt {
	h.t.Helper()
	rc, err := h.leg.Send(context.Background(), m)
	if err != nil || rc.Status != message.StatusQueued || rc.Detail != outbox.QueuedDetail || rc.MsgID != m.ID {
		h.t.Fatalf("Send = %+v, %v; want queued", rc, err)
	}
	return rc
}

// receipt waits for the next receipt Run publishes, moving the clock on so
// that retries fall due.
func (h *harness) receipt() message.Receipt {
	h.t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		select {
		case ev := <-h.events:
			if ev.Type != message.EventReceipt || ev.Receipt == nil || ev.Leg != message.ProtocolRemote {
				h.t.Fatalf("event %+v, want a receipt of the remote leg", ev)
			}
			return *ev.Receipt
		case <-time.After(time.Millisecond):
			h.clock.Advance(h.cfg.MaxInterval)
		}
	}
	h.t.Fatal("no receipt published")
	return message.Receipt{}
}

// called waits for the inner leg to be asked to send.
func (h *harness) called() message.Message {
	h.t.Helper()
	select {
	case m := <-h.inner.called:
		return m
	case <-time.After(wait):
		h.t.Fatal("the inner leg was not asked to send")
		return message.Message{}
	}
}

// quiet checks that for a little while nothing more is sent or published.
func (h *harness) quiet(what string) {
	h.t.Helper()
	before := len(h.inner.messages())
	select {
	case ev := <-h.events:
		h.t.Fatalf("%s: published %+v", what, ev)
	case <-time.After(50 * time.Millisecond):
	}
	if ms := h.inner.messages(); len(ms) != before {
		h.t.Fatalf("%s: the inner leg was asked to send %s", what, ms[len(ms)-1].ID)
	}
}

func entry(t *testing.T, s *outbox.Store, id string) outbox.Entry {
	t.Helper()
	e, err := s.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestDeliveryUntilTheServerAcknowledges(t *testing.T) {
	refused := func(m message.Message, _ int) (message.Receipt, error) {
		return message.Receipt{}, fmt.Errorf("remote leg: post: %w", errRefused)
	}
	tests := []struct {
		name       string
		script     func(m message.Message, call int) (message.Receipt, error)
		cfg        outbox.Config
		want       message.Status
		wantCalls  int
		wantDetail string
		wantReason []string
	}{
		{"a message the server takes at once is acknowledged after one attempt", sent,
			outbox.Config{}, message.StatusSent, 1, "accepted by the server", nil},
		{"failed receipts are retried until the inner leg says sent", func(m message.Message, call int) (message.Receipt, error) {
			if call < 3 {
				return unavailable(m, call)
			}
			return sent(m, call)
		}, outbox.Config{}, message.StatusSent, 3, "accepted by the server", nil},
		{"an error that is not permanent is retried", func(m message.Message, call int) (message.Receipt, error) {
			if call < 4 {
				return message.Receipt{}, errors.New("connection reset by peer")
			}
			return sent(m, call)
		}, outbox.Config{}, message.StatusSent, 4, "accepted by the server", nil},
		{"a delivered answer acknowledges the message too", func(m message.Message, _ int) (message.Receipt, error) {
			return message.Receipt{MsgID: m.ID, Status: message.StatusDelivered, Detail: "in the session's history"}, nil
		}, outbox.Config{}, message.StatusDelivered, 1, "in the session's history", nil},
		{"a permanent refusal fails the message after MaxRefusals attempts, with the reason", refused,
			outbox.Config{MaxRefusals: 3}, message.StatusFailed, 3, "refused",
			[]string{"refused by the server after 3 attempts", "remote leg: post: session not found"}},
		{"a transient failure between refusals starts their count again", func(m message.Message, call int) (message.Receipt, error) {
			if call == 2 {
				return unavailable(m, call)
			}
			return refused(m, call)
		}, outbox.Config{MaxRefusals: 2}, message.StatusFailed, 4, "refused", []string{"after 4 attempts"}},
		{"a message not acknowledged within MaxAge fails as expired", unavailable,
			outbox.Config{MaxAge: time.Minute}, message.StatusFailed, 0, "expired",
			[]string{"not acknowledged by the server within", "HTTP 503 api_error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, stateDir(t), newInner(tt.script), outbox.Options{}, tt.cfg)
			m := msg("m1", "bridge:s1", "hello")
			h.send(m)
			h.start()
			rc := h.receipt()
			if rc.MsgID != "m1" || rc.Status != tt.want || rc.Detail != tt.wantDetail {
				t.Fatalf("receipt %+v, want %v with detail %q", rc, tt.want, tt.wantDetail)
			}
			for _, s := range tt.wantReason {
				if !strings.Contains(rc.Reason, s) {
					t.Errorf("reason %q does not say %q", rc.Reason, s)
				}
			}
			calls := h.inner.count("m1")
			if tt.wantCalls != 0 && calls != tt.wantCalls {
				t.Errorf("the inner leg was asked %d times, want %d", calls, tt.wantCalls)
			}
			for _, c := range h.inner.messages() {
				if c.ID != m.ID || c.Body != m.Body || c.To != m.To || !slices.Equal(c.HopChain, m.HopChain) {
					t.Errorf("an attempt sent %+v, not the accepted message", c)
				}
			}
			e := entry(t, h.store, "m1")
			wantState := message.OutboxAcked
			if tt.want == message.StatusFailed {
				wantState = message.OutboxFailed
			}
			if e.State != wantState || e.Attempts != calls || e.FinishedAt.IsZero() {
				t.Errorf("stored %v after %d attempts (finished %v), want %v after %d", e.State, e.Attempts, e.FinishedAt, wantState, calls)
			}
			h.quiet("after the final receipt")
		})
	}
}

func TestAFailedAttemptIsRecordedBeforeTheNext(t *testing.T) {
	h := newHarness(t, stateDir(t), newInner(func(m message.Message, call int) (message.Receipt, error) {
		if call < 2 {
			return unavailable(m, call)
		}
		return sent(m, call)
	}), outbox.Options{}, outbox.Config{})
	h.send(msg("m1", "bridge:s1", "hello"))
	h.start()
	h.called()
	// The second attempt waits until the listing below is taken, so it
	// shows the first attempt's record and not the second's.
	release := make(chan struct{})
	h.inner.mu.Lock()
	h.inner.hold["bridge:s1"] = release
	h.inner.mu.Unlock()
	// The second attempt starts only once the first is on disk.
	go func() {
		for range 2000 {
			if h.inner.count("m1") > 1 {
				return
			}
			h.clock.Advance(h.cfg.MaxInterval)
			time.Sleep(time.Millisecond)
		}
	}()
	h.called()
	items, err := h.leg.Outbox(true)
	if err != nil || len(items) != 1 {
		t.Fatalf("outbox = %+v, %v", items, err)
	}
	it := items[0]
	if it.State != message.OutboxPending || it.Attempts != 1 || it.LastError != "HTTP 503 api_error" || it.NextAttemptAt.IsZero() {
		t.Fatalf("listed %+v during the second attempt", it)
	}
	close(release)
	if rc := h.receipt(); rc.Status != message.StatusSent {
		t.Fatalf("receipt %+v", rc)
	}
}

func TestARestartResumesEveryPendingMessage(t *testing.T) {
	dir := stateDir(t)
	first := newHarness(t, dir, newInner(unavailable), outbox.Options{}, outbox.Config{})
	for _, m := range []message.Message{msg("a1", "bridge:s1", "a1"), msg("b1", "bridge:s2", "b1"), msg("a2", "bridge:s1", "a2")} {
		first.send(m)
	}
	first.start()
	first.called()
	first.called() // one head per target: a1 and b1
	for deadline := time.Now().Add(wait); entry(t, first.store, "a1").Attempts+entry(t, first.store, "b1").Attempts < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the failed attempts were not recorded")
		}
		time.Sleep(time.Millisecond)
	}
	first.stop()
	first.store.Close()

	inner := newInner(sent)
	second := newHarness(t, dir, inner, outbox.Options{}, outbox.Config{})
	items, _ := second.leg.Outbox(false)
	if len(items) != 3 {
		t.Fatalf("after the restart %d are pending, want 3", len(items))
	}
	second.start()
	got := map[string]message.Status{}
	for range 3 {
		rc := second.receipt()
		got[rc.MsgID] = rc.Status
	}
	for _, id := range []string{"a1", "a2", "b1"} {
		if got[id] != message.StatusSent || inner.count(id) != 1 {
			t.Errorf("%s: %v after %d attempts, want sent after 1", id, got[id], inner.count(id))
		}
		wantAttempts := 2 // one failed before the restart
		if id == "a2" {
			wantAttempts = 1
		}
		if e := entry(t, second.store, id); e.State != message.OutboxAcked || e.Attempts != wantAttempts {
			t.Errorf("%s stored %v after %d attempts", id, e.State, e.Attempts)
		}
	}
	if order := inner.ids(); slices.Index(order, "a1") > slices.Index(order, "a2") {
		t.Errorf("resumed out of order: %v", order)
	}
}

func TestOrderPerTarget(t *testing.T) {
	inner := newInner(sent)
	inner.hold["bridge:s1"] = make(chan struct{})
	h := newHarness(t, stateDir(t), inner, outbox.Options{}, outbox.Config{})
	for _, m := range []message.Message{msg("a1", "bridge:s1", "1"), msg("a2", "bridge:s1", "2"), msg("b1", "bridge:s2", "x"), msg("a3", "bridge:s1", "3")} {
		h.send(m)
	}
	h.start()
	seen := map[string]bool{h.called().ID: true, h.called().ID: true}
	if !seen["a1"] || !seen["b1"] {
		t.Fatalf("first attempts were %v, want a1 and b1", seen)
	}
	t.Run("a target waiting on its first message does not hold up another", func(t *testing.T) {
		if rc := h.receipt(); rc.MsgID != "b1" || rc.Status != message.StatusSent {
			t.Fatalf("receipt %+v, want b1 sent", rc)
		}
		h.quiet("while a1 is under way")
	})
	t.Run("a target gets its messages one at a time, in the order accepted", func(t *testing.T) {
		close(inner.hold["bridge:s1"])
		for _, want := range []string{"a1", "a2", "a3"} {
			if rc := h.receipt(); rc.MsgID != want {
				t.Fatalf("receipt for %s, want %s", rc.MsgID, want)
			}
		}
		var a []string
		for _, id := range inner.ids() {
			if strings.HasPrefix(id, "a") {
				a = append(a, id)
			}
		}
		if !slices.Equal(a, []string{"a1", "a2", "a3"}) {
			t.Fatalf("target s1 was sent %v", a)
		}
		if o := inner.overlaps(); len(o) > 0 {
			t.Fatalf("asked twice at once for %v", o)
		}
	})
}

func TestAttemptsAtOnceAreBounded(t *testing.T) {
	inner := newInner(sent)
	targets := []string{"bridge:s1", "bridge:s2", "bridge:s3"}
	release := make(chan struct{})
	for _, tg := range targets {
		inner.hold[tg] = release
	}
	h := newHarness(t, stateDir(t), inner, outbox.Options{}, outbox.Config{MaxInFlight: 2})
	for i, tg := range targets {
		h.send(msg(fmt.Sprint("m", i), tg, "x"))
	}
	h.start()
	h.called()
	h.called()
	h.quiet("with two attempts under way")
	close(release)
	for range 3 {
		if rc := h.receipt(); rc.Status != message.StatusSent {
			t.Fatalf("receipt %+v", rc)
		}
	}
}

func TestASendTheStoreCannotTakeIsNotAccepted(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(h *harness)
		is     error
		ready  string
	}{
		{"beyond the cap a send fails as full and the leg is not ready", func(h *harness) {
			h.send(msg("m1", "bridge:s1", "fills it"))
		}, message.ErrOutboxFull, "outbox full"},
		{"beyond the byte cap a send fails as full and the leg is not ready", func(h *harness) {
			// Empty messages until one is refused: m2 is larger still.
			for i := 0; i < 100; i++ {
				if _, err := h.leg.Send(context.Background(), msg(fmt.Sprintf("f%02d", i), "bridge:s1", "")); err != nil {
					return
				}
			}
			h.t.Fatal("100 messages fit in 4 KiB")
		}, message.ErrOutboxFull, ""}, // a smaller message might still fit: the leg stays ready
		{"when the file cannot be written a send fails and the leg is not ready", func(h *harness) {
			h.store.Close()
		}, nil, "cannot write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := outbox.Options{MaxPending: 1}
			if strings.Contains(tt.name, "byte cap") {
				o = outbox.Options{MaxPendingBytes: 4 << 10}
			}
			h := newHarness(t, stateDir(t), newInner(sent), o, outbox.Config{})
			tt.break_(h)
			rc, err := h.leg.Send(context.Background(), msg("m2", "bridge:s1", "refused"))
			if err == nil || rc.Status != message.StatusFailed || rc.MsgID != "m2" || !strings.Contains(rc.Reason, "not accepted") {
				t.Fatalf("Send = %+v, %v; want a failed receipt and an error", rc, err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("err %v, want %v", err, tt.is)
			}
			if err := h.leg.Ready(); tt.ready != "" && (err == nil || !strings.Contains(err.Error(), tt.ready)) {
				t.Fatalf("Ready = %v, want it to say %q", err, tt.ready)
			}
		})
	}
}

func TestTheRouterSeesTheTruth(t *testing.T) {
	tests := []struct {
		name     string
		script   func(m message.Message, call int) (message.Receipt, error)
		want     message.Status
		receipts [][]message.Status // any of these
	}{
		// The inner leg's delivered (the echo) may overtake the outbox's
		// sent: the state machine takes queued -> delivered and ignores
		// the late sent.
		{"a message the server takes is queued, then sent, then delivered", func(m message.Message, call int) (message.Receipt, error) {
			if call == 1 {
				return unavailable(m, call)
			}
			return sent(m, call)
		}, message.StatusDelivered, [][]message.Status{{message.StatusSent, message.StatusDelivered}, {message.StatusDelivered}}},
		{"a message the server refuses is queued, then failed with the reason", func(m message.Message, _ int) (message.Receipt, error) {
			return message.Receipt{}, errRefused
		}, message.StatusFailed, [][]message.Status{{message.StatusFailed}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner := newInner(tt.script)
			inner.echo = true
			inner.hold["bridge:s1"] = make(chan struct{}) // until the router has answered
			h := newHarness(t, stateDir(t), inner, outbox.Options{}, outbox.Config{MaxRefusals: 1})
			rt := router.New(router.Config{Clock: h.clock}, h.leg)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- rt.Run(ctx) }()
			defer func() { cancel(); <-done }()
			out, err := rt.Send(ctx, router.SendRequest{To: "bridge:s1", Body: "hello"})
			if err != nil || out.Status != message.StatusQueued {
				t.Fatalf("router.Send = %+v, %v; want queued", out, err)
			}
			if e := entry(t, h.store, out.Message.ID); e.Message.Body != "hello" {
				t.Fatalf("stored %+v", e)
			}
			close(inner.hold["bridge:s1"])
			go func() { // retries fall due
				for ctx.Err() == nil {
					h.clock.Advance(h.cfg.MaxInterval)
					time.Sleep(time.Millisecond)
				}
			}()
			wctx, wcancel := context.WithTimeout(ctx, wait)
			defer wcancel()
			got, err := rt.Wait(wctx, out.Message.ID)
			if err != nil || got.Status != tt.want {
				t.Fatalf("Wait = %v, %v; want %v", got.Status, err, tt.want)
			}
			var statuses []message.Status
			for _, rc := range got.Receipts {
				statuses = append(statuses, rc.Status)
			}
			if !slices.ContainsFunc(tt.receipts, func(want []message.Status) bool { return slices.Equal(statuses, want) }) {
				t.Fatalf("receipts %v, want %v", statuses, tt.receipts)
			}
			if tt.want == message.StatusFailed && !strings.Contains(got.Receipts[0].Reason, errRefused.Error()) {
				t.Fatalf("reason %q does not give the server's", got.Receipts[0].Reason)
			}
		})
	}
}

func TestListingAndPreview(t *testing.T) {
	h := newHarness(t, stateDir(t), newInner(sent), outbox.Options{}, outbox.Config{
		EventUUID: func(id string) string { return "uuid-of-" + id },
	})
	h.send(msg("m1", "bridge:s1", strings.Repeat("word ", 30)))
	h.send(msg("m2", "bridge:s2", "line one\nline\ttwo"))
	items, err := h.leg.Outbox(false)
	if err != nil || len(items) != 2 {
		t.Fatalf("outbox = %+v, %v", items, err)
	}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"a long body is cut with an ellipsis", items[0].Preview, strings.Repeat("word ", 16) + "…"},
		{"newlines and tabs become spaces", items[1].Preview, "line one line two"},
		{"the event uuid is the configured one", items[1].EventUUID, "uuid-of-m2"},
		{"the target is the message's", items[0].To, "bridge:s1"},
		{"the state is pending", items[0].State.String(), "pending"},
		{"the depth counts the pending", fmt.Sprint(h.leg.Depth()), "2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Fatalf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
	h.start()
	h.receipt()
	h.receipt()
	pending, _ := h.leg.Outbox(false)
	all, _ := h.leg.Outbox(true)
	if len(pending) != 0 || len(all) != 2 || all[0].State != message.OutboxAcked || h.leg.Depth() != 0 {
		t.Fatalf("after delivery: pending %+v, all %+v, depth %d", pending, all, h.leg.Depth())
	}
}

func TestAShutdownDuringAnAttempt(t *testing.T) {
	tests := []struct {
		name     string
		script   func(m message.Message, call int) (message.Receipt, error)
		state    message.OutboxState
		attempts int
	}{
		{"an attempt that got through is recorded acked", sent, message.OutboxAcked, 1},
		{"an attempt cut short stays pending and does not count", unavailable, message.OutboxPending, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner := newInner(tt.script)
			inner.hold["bridge:s1"] = make(chan struct{}) // released by the shutdown
			h := newHarness(t, stateDir(t), inner, outbox.Options{}, outbox.Config{})
			h.send(msg("m1", "bridge:s1", "x"))
			h.start()
			h.called()
			h.stop()
			if e := entry(t, h.store, "m1"); e.State != tt.state || e.Attempts != tt.attempts {
				t.Fatalf("stored %v after %d attempts, want %v after %d", e.State, e.Attempts, tt.state, tt.attempts)
			}
		})
	}
}
