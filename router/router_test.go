package router

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/clock"
)

// claimsSockets claims what the local legs claim: any socket path.
func claimsSockets(a addressing.Address) bool { return a.Kind == addressing.KindUDS }

// fake is the shared fake leg named name listing ss, claiming socket paths.
func fake(name message.Protocol, ss ...message.Session) *legtest.Fake {
	f := legtest.New(name, ss...)
	f.OnClaims = claimsSockets
	return f
}

func newFake() *legtest.Fake {
	return fake(message.ProtocolClaude,
		message.Session{Address: "uds:/tmp/cc-socks/10.sock", Protocol: message.ProtocolClaude, Name: "work", SessionID: "s-a", PID: 10},
		message.Session{Address: "uds:/tmp/cc-socks/11.sock", Protocol: message.ProtocolClaude, Name: "work", SessionID: "s-b", PID: 11},
		message.Session{Address: "uds:/tmp/cc-socks/12.sock", Protocol: message.ProtocolClaude, Name: "review", SessionID: "s-c", PID: 12},
	)
}

func start(t *testing.T, legs ...leg.Leg) *Router {
	t.Helper()
	return startWith(t, Config{}, legs...)
}

func startWith(t *testing.T, cfg Config, legs ...leg.Leg) *Router {
	t.Helper()
	r := New(cfg, legs...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r
}

func TestSendResolvesAndTracks(t *testing.T) {
	tests := []struct {
		name    string
		to      string
		wantPID int
		wantErr any
	}{
		{"a unique name goes to its session", "review", 12, nil},
		{"a name with a ref pins one of two twins", "work [" + addressing.Ref("s-b") + "]", 11, nil},
		{"a bare ref finds its session", addressing.Ref("s-a"), 10, nil},
		{"a raw socket outside the roster is claimed by the leg", "uds:/tmp/cc-socks/99.sock", 0, nil},
		{"an ambiguous name is refused with candidates", "work", 0, &addressing.AmbiguousError{}},
		{"an unknown name is refused with suggestions", "revew", 0, &addressing.NotFoundError{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leg := newFake()
			r := start(t, leg)
			out, err := r.Send(context.Background(), SendRequest{To: tt.to, Body: "hi"})
			switch want := tt.wantErr.(type) {
			case *addressing.AmbiguousError:
				if !errors.As(err, &want) || len(want.Candidates) != 2 {
					t.Fatalf("err = %v, want ambiguity with 2 candidates", err)
				}
				return
			case *addressing.NotFoundError:
				if !errors.As(err, &want) || len(want.Suggestions) == 0 {
					t.Fatalf("err = %v, want not found with suggestions", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != message.StatusSent || len(leg.Sent()) != 1 || leg.Sent()[0].ToPID != tt.wantPID {
				t.Fatalf("status %v, sent %+v", out.Status, leg.Sent())
			}
			if leg.Sent()[0].Mode != message.ModePrompting {
				t.Errorf("default mode = %v, want prompting", leg.Sent()[0].Mode)
			}
		})
	}
}

func TestABridgeAddressWithoutARemoteLegSaysHowToGetOne(t *testing.T) {
	r := start(t, newFake())
	_, err := r.Send(context.Background(), SendRequest{To: "bridge:session_01abc", Body: "hi"})
	if !errors.Is(err, ErrNoLeg) || !strings.Contains(err.Error(), "--remote-token-file") {
		t.Fatalf("err = %v, want ErrNoLeg naming the remote credential flags", err)
	}
}

func TestReceiptsMoveAMessageThroughItsStates(t *testing.T) {
	leg := newFake()
	r := start(t, leg)
	out, err := r.Send(context.Background(), SendRequest{To: "review", Body: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	id := out.Message.ID
	for _, st := range []message.Status{message.StatusHeld, message.StatusHeld, message.StatusDelivered, message.StatusDenied} {
		leg.Emit(t, message.Event{Type: message.EventReceipt, Receipt: &message.Receipt{MsgID: id, Status: st}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := r.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != message.StatusDelivered {
		t.Fatalf("status = %v, want delivered (a repeat held and a late denied are ignored)", got.Status)
	}
	var seq []message.Status
	for _, rc := range got.Receipts {
		seq = append(seq, rc.Status)
	}
	if len(seq) != 3 || seq[0] != message.StatusSent || seq[1] != message.StatusHeld || seq[2] != message.StatusDelivered {
		t.Fatalf("receipts = %v, want sent, held, delivered", seq)
	}
}

// wouldDrop is a leg's refusal to write what the receiver would drop.
type wouldDrop struct{ reason message.DropReason }

func (w wouldDrop) Error() string                  { return "not sent: the receiver would drop it" }
func (w wouldDrop) DropReason() message.DropReason { return w.reason }

func TestARefusalThatStandsForADropIsReportedAsThatDrop(t *testing.T) {
	leg := newFake()
	leg.SendErr = fmt.Errorf("qwen: %w", wouldDrop{message.DropRateLimited})
	r := start(t, leg)
	out, err := r.Send(context.Background(), SendRequest{To: "review", Body: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != message.StatusDropped || out.Receipts[0].DropReason != message.DropRateLimited || !strings.Contains(out.Receipts[0].Reason, "would drop") {
		t.Fatalf("got %+v, want dropped: rate-limited with the leg's words", out)
	}
}

func TestAFailedWriteIsAFinalFailure(t *testing.T) {
	leg := newFake()
	leg.SendErr = errors.New("connection refused")
	r := start(t, leg)
	out, err := r.Send(context.Background(), SendRequest{To: "review", Body: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != message.StatusFailed || out.Receipts[0].Reason != "connection refused" {
		t.Fatalf("got %+v", out)
	}
}

func TestASettlingLegInfersDeliveryWithoutAReceipt(t *testing.T) {
	leg := newFake()
	leg.SettleAfter = 10 * time.Millisecond
	r := start(t, leg.With(legtest.Settles))
	out, err := r.Send(context.Background(), SendRequest{To: "review", Body: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := r.Wait(ctx, out.Message.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := got.Receipts[len(got.Receipts)-1]
	if got.Status != message.StatusDelivered || last.Detail != "inferred" {
		t.Fatalf("got %+v, want delivered (inferred)", got)
	}
}

// The inferred delivery is a receipt like a leg's: watch and /v1/events
// showed a Claude send as "sent [not final]" and never its outcome.
func TestAnInferredDeliveryIsPublishedAsAReceiptEvent(t *testing.T) {
	leg := newFake()
	leg.SettleAfter = 10 * time.Millisecond
	r := start(t, leg.With(legtest.Settles))
	_, _, sub := r.Hub().Subscribe(-1)
	defer sub.Close()
	out, err := r.Send(context.Background(), SendRequest{To: "review", Body: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev := <-sub.C:
			if rc := ev.Receipt; ev.Type == message.EventReceipt && rc.MsgID == out.Message.ID &&
				rc.Status == message.StatusDelivered && rc.Detail == "inferred" {
				return
			}
		case <-deadline:
			t.Fatal("no receipt event says the message was delivered (inferred)")
		}
	}
}

// However short the settle window, a send's "sent" is published before
// the delivery inferred from it: watch and the console show the last
// receipt as where the message stands.
func TestASendsFirstReceiptIsPublishedBeforeItsInferredDelivery(t *testing.T) {
	leg := newFake()
	leg.SettleAfter = 0 // fires as soon as the window starts
	const sends = 200
	// Room for every event of every send: a subscriber that falls behind
	// is cut off, and a slow run (-race, a loaded machine) falls behind.
	r := startWith(t, Config{WatcherBuf: 4 * sends}, leg.With(legtest.Settles))
	_, _, sub := r.Hub().Subscribe(-1)
	defer sub.Close()
	sent := make(chan string, sends)
	var sendErr error
	go func() {
		defer close(sent)
		for range sends {
			out, err := r.Send(context.Background(), SendRequest{To: "review", Body: "hi"})
			if err != nil {
				sendErr = err
				return
			}
			sent <- out.Message.ID
		}
	}()
	seen := map[string]message.Status{} // the first receipt event of each
	deadline := time.After(10 * time.Second)
	for delivered := 0; delivered < sends; {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				t.Fatalf("the subscriber was cut off (%v) after %d of %d inferred deliveries", sub.Err(), delivered, sends)
			}
			rc := ev.Receipt
			if ev.Type != message.EventReceipt || rc.MsgID == "" {
				continue
			}
			if _, ok := seen[rc.MsgID]; !ok {
				seen[rc.MsgID] = rc.Status
			}
			if rc.Status == message.StatusDelivered {
				delivered++
			}
		case <-deadline:
			for range sent { // the sender is done before the test is
			}
			t.Fatalf("%d of %d inferred deliveries published (send error: %v)", delivered, sends, sendErr)
		}
	}
	for id := range sent {
		if first := seen[id]; first != message.StatusSent {
			t.Fatalf("message %s: first receipt event %s, want sent before the inferred delivery", id, first)
		}
	}
	if sendErr != nil {
		t.Fatal(sendErr)
	}
}

func TestAHeldReceiptStopsTheSettleInference(t *testing.T) {
	leg := newFake()
	leg.SettleAfter = 50 * time.Millisecond
	r := start(t, leg.With(legtest.Settles))
	out, err := r.Send(context.Background(), SendRequest{To: "review", Body: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	leg.Emit(t, message.Event{Type: message.EventReceipt, Receipt: &message.Receipt{MsgID: out.Message.ID, Status: message.StatusHeld}})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	got, _ := r.Wait(ctx, out.Message.ID)
	if got.Status != message.StatusHeld {
		t.Fatalf("status = %v, want held to stay held", got.Status)
	}
}

func TestTheOutboxForgetsTheOldestBeyondItsCap(t *testing.T) {
	leg := newFake()
	r := New(Config{KeepOutbound: 2}, leg)
	var ids []string
	for range 3 {
		out, err := r.Send(context.Background(), SendRequest{To: "review", Body: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, out.Message.ID)
	}
	if _, err := r.Message(ids[0]); !errors.Is(err, ErrUnknownMessage) {
		t.Fatalf("oldest still known: %v", err)
	}
	if _, err := r.Message(ids[2]); err != nil {
		t.Fatalf("newest forgotten: %v", err)
	}
}

func TestResolveReusesARecentRosterAndRefreshesOnAMiss(t *testing.T) {
	leg := newFake()
	clk := clock.NewFakeClock(time.Unix(1000, 0))
	r := New(Config{Clock: clk}, leg)
	ctx := context.Background()
	for range 3 {
		if _, _, err := r.Resolve(ctx, "review"); err != nil {
			t.Fatal(err)
		}
	}
	if leg.Lists() != 1 {
		t.Fatalf("listed %d times for three resolutions within the TTL, want 1", leg.Lists())
	}
	leg.AddSession(message.Session{Address: "uds:/tmp/cc-socks/13.sock", Protocol: message.ProtocolClaude, Name: "newcomer", SessionID: "s-d"})
	if _, s, err := r.Resolve(ctx, "newcomer"); err != nil || s.PID != 0 || s.Name != "newcomer" {
		t.Fatalf("a session that started after the listing was not found: %+v %v", s, err)
	}
	if leg.Lists() != 2 {
		t.Fatalf("listed %d times, want a refresh on the miss", leg.Lists())
	}
	clk.Advance(3 * time.Second)
	if _, _, err := r.Resolve(ctx, "review"); err != nil {
		t.Fatal(err)
	}
	if leg.Lists() != 3 {
		t.Fatalf("listed %d times, want a refresh after the TTL", leg.Lists())
	}
}

func TestBridgeOnlyLimitsWhichNamesAreBridged(t *testing.T) {
	tests := []struct {
		name    string
		only    []string
		session string
		want    bool
	}{
		{"no limit bridges every name", nil, "anything", true},
		{"a matching glob bridges the name", []string{"work-*"}, "work-08", true},
		{"a name matching no glob is not bridged", []string{"work-*", "review"}, "scratch", false},
		{"an exact name is a glob too", []string{"work-*", "review"}, "review", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(Config{BridgeOnly: tt.only})
			if got := r.bridged(tt.session); got != tt.want {
				t.Fatalf("bridged(%q) = %v, want %v", tt.session, got, tt.want)
			}
		})
	}
}

func TestAnAddressThatParsesAsANameResolvesToTheSessionListedUnderIt(t *testing.T) {
	leg := newFake()
	leg.AddSession(message.Session{Address: "hosted:api", Protocol: message.ProtocolClaude, Name: "api", SessionID: "s-api"})
	r := New(Config{}, leg)
	for _, addr := range []string{"hosted:api", "api"} {
		if _, s, err := r.Resolve(context.Background(), addr); err != nil || s.SessionID != "s-api" {
			t.Errorf("Resolve(%q) = %+v, %v; want the session listed as hosted:api", addr, s, err)
		}
	}
	if _, _, err := r.Resolve(context.Background(), "hosted:nobody"); err == nil {
		t.Error("an address no session is listed under resolved")
	}
}

func TestANameAtAHostWithFederationOffSaysFederationIsOff(t *testing.T) {
	r := New(Config{}, newFake())
	_, _, err := r.Resolve(context.Background(), "review@laptop")
	var nf *addressing.NotFoundError
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "federation is off") {
		t.Fatalf("Resolve(review@laptop) = %v, want a not-found that says federation is off", err)
	}
}
