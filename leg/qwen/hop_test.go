package qwen

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/clock"
)

// tok is a well-formed hop token: 24 lower-case hex characters.
func tok(i int) string { return fmt.Sprintf("%024x", i+0xabc) }

func chainOf(n int) []string {
	c := make([]string, n)
	for i := range c {
		c[i] = tok(i)
	}
	return c
}

func quoted(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = `"` + s + `"`
	}
	return "[" + strings.Join(q, ",") + "]"
}

func TestHopChainInUserFrames(t *testing.T) {
	user := func(chain string) string {
		return `{"msgV":1,"msgId":"m-1","type":"user","message":{"role":"user","content":"hi"},"hopChain":` + chain + `}`
	}
	tests := []struct {
		name  string
		chain string
		want  []string
	}{
		{"a chain of tokens is read, oldest first", quoted(chainOf(3)), chainOf(3)},
		{"a chain of the most entries the envelope allows is read", quoted(chainOf(message.MaxHopChain)), chainOf(message.MaxHopChain)},
		{"a chain over the cap is dropped whole", quoted(chainOf(message.MaxHopChain + 1)), nil},
		{"an empty chain reads as none", `[]`, nil},
		{"null reads as none", `null`, nil},
		{"a chain that is a string is dropped", `"` + tok(1) + `"`, nil},
		{"a chain that is an object is dropped", `{"0":"` + tok(1) + `"}`, nil},
		{"a chain with a number in it is dropped whole", `["` + tok(1) + `",5]`, nil},
		{"a chain with an upper-case token is dropped whole", quoted([]string{tok(1), strings.ToUpper(tok(2) + "ab")[:message.HopTokenLen]}), nil},
		{"a chain with a short token is dropped whole", quoted([]string{tok(1), "abc"}), nil},
		{"a chain with a nested array is dropped whole", `[["` + tok(1) + `"]]`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ParseLine([]byte(user(tt.chain)))
			if err != nil {
				t.Fatalf("the frame itself was refused: %v", err)
			}
			if !reflect.DeepEqual(l.User.HopChain, tt.want) {
				t.Fatalf("hop chain = %q, want %q", l.User.HopChain, tt.want)
			}
		})
	}
}

func TestHopChainIsWrittenOnlyWhenThereIsOne(t *testing.T) {
	base := UserFrame{MsgID: "m-1", From: "/s/1.sock", FromName: "n", FromMode: message.ModePrompting, ToSessionID: "s", Content: "hi"}
	tests := []struct {
		name  string
		chain []string
		err   error
		key   bool // "hopChain" appears on the wire
	}{
		{"a frame without a chain is exactly Qwen Code's", nil, nil, false},
		{"a frame with a chain carries it after Qwen Code's keys", chainOf(2), nil, true},
		{"a chain over the cap is refused", chainOf(message.MaxHopChain + 1), ErrBadHopChain, false},
		{"a chain with a bad token is refused", []string{"not-a-token"}, ErrBadHopChain, false},
		{"an empty, non-nil chain is refused", []string{}, ErrBadHopChain, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := base
			f.HopChain = tt.chain
			b, err := f.Marshal()
			if !errors.Is(err, tt.err) {
				t.Fatalf("Marshal: %v, want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if got := strings.Contains(string(b), `"hopChain"`); got != tt.key {
				t.Fatalf("hopChain on the wire = %v in %s", got, b)
			}
			if tt.key && !strings.HasSuffix(string(b), `"hopChain":`+quoted(tt.chain)+`}`) {
				t.Fatalf("the chain is not the last key: %s", b)
			}
			l, err := ParseLine(b)
			if err != nil || !reflect.DeepEqual(*l.User, f) {
				t.Fatalf("round trip: %+v, %v; want %+v", describeLine(l), err, f)
			}
		})
	}
}

// peerPair is the gateway's Qwen peer and a Qwen session beside it, sharing one
// Qwen home, each served until the test ends.
type peerPair struct {
	gw, q *Leg
	clk   *clock.FakeClock   // both peers': the receiver's meter moves with the mirror
	got   chan message.Event // what reaches q
}

func newPeerPair(t *testing.T) *peerPair {
	t.Helper()
	home, run := t.TempDir(), t.TempDir()
	r := &peerPair{clk: clock.NewFakeClock(time.Time{}), got: make(chan message.Event, 256)}
	var err error
	if r.gw, err = Register(Config{Name: "gateway", Home: home, RuntimeDir: run, TmpDir: t.TempDir(), Clock: r.clk}); err != nil {
		t.Fatal(err)
	}
	if r.q, err = Register(Config{Name: "qwen-work", Home: home, RuntimeDir: run, TmpDir: t.TempDir(), Clock: r.clk}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gwEvents := make(chan message.Event, 256)
	done := make(chan struct{}, 3)
	go func() { _ = r.gw.Run(ctx, gwEvents); done <- struct{}{} }()
	go func() { _ = r.q.Run(ctx, r.got); done <- struct{}{} }()
	go func() { // the gateway's own inbox hears receipts: keep it drained
		defer func() { done <- struct{}{} }()
		for {
			select {
			case <-ctx.Done():
				return
			case <-gwEvents:
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		for range 3 {
			<-done
		}
	})
	return r
}

// to is a message from the gateway to the Qwen session.
func (r *peerPair) to(id, body string, chain []string) message.Message {
	return message.Message{ID: id, To: "uds:" + r.q.SocketPath(), ToSessionID: r.q.SessionID(), Body: body,
		Mode: message.ModePrompting, HopChain: chain}
}

func (r *peerPair) arrived(t *testing.T, id string) message.Message {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-r.got:
			if ev.Type == message.EventMessage && ev.Message.ID == id {
				return *ev.Message
			}
		case <-timeout:
			t.Fatalf("message %s never reached the Qwen session", id)
		}
	}
}

func TestTheHopChainCrossesTheQwenLeg(t *testing.T) {
	r := newPeerPair(t)
	ctx := context.Background()
	sender := message.Session{Address: "uds:/tmp/cc-socks/8.sock", Protocol: message.ProtocolClaude, Name: "work-08"}
	tests := []struct {
		name  string
		chain []string
		send  func(context.Context, message.Message) (message.Receipt, error)
	}{
		{"a direct send keeps its chain", chainOf(3), r.gw.Send},
		{"a send as an alias keeps its chain", chainOf(28), func(ctx context.Context, m message.Message) (message.Receipt, error) {
			return r.gw.SendAs(ctx, sender, m)
		}},
		{"a send without a chain arrives without one", nil, r.gw.Send},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprintf("c0000000-0000-4000-8000-%012d", i)
			if _, err := tt.send(ctx, r.to(id, "hop "+tt.name, tt.chain)); err != nil {
				t.Fatal(err)
			}
			got := r.arrived(t, id)
			if !reflect.DeepEqual(got.HopChain, tt.chain) {
				t.Fatalf("arrived with chain %q, want %q", got.HopChain, tt.chain)
			}
		})
	}
}

// The bridge forwards to a Qwen session with SendAs: it must be paced by
// the same mirror of the receiver's limits as a direct send, or a bounce
// between aliases would be dropped by the receiver rather than refused here.
func TestASendAsAnAliasIsPacedByTheReceiversLimits(t *testing.T) {
	r := newPeerPair(t)
	ctx := context.Background()
	sender := message.Session{Address: "uds:/tmp/cc-socks/8.sock", Protocol: message.ProtocolClaude, Name: "work-08"}
	sendAs := func(i int, body string) error {
		_, err := r.gw.SendAs(ctx, sender, r.to(fmt.Sprintf("d0000000-0000-4000-8000-%012d", i), body, chainOf(1)))
		return err
	}
	burst := DefaultLimits().Sender.Burst
	for i := range burst {
		if err := sendAs(i, fmt.Sprint("bounce ", i)); err != nil {
			t.Fatalf("send %d of the burst: %v", i, err)
		}
	}
	t.Run("a send over the receiver's burst is refused before it is written", func(t *testing.T) {
		err := sendAs(100, "one too many")
		var w *WouldDropError
		if !errors.As(err, &w) || w.Repeat || w.SentInBurst != burst {
			t.Fatalf("got %v, want a WouldDropError for the burst", err)
		}
	})
	t.Run("the same body again is refused as a repeat", func(t *testing.T) {
		err := sendAs(101, fmt.Sprint("bounce ", burst-1))
		var w *WouldDropError
		if !errors.As(err, &w) || !w.Repeat {
			t.Fatalf("got %v, want a WouldDropError for a repeat", err)
		}
	})
	t.Run("a refill's worth of time lets one more through", func(t *testing.T) {
		r.clk.Advance(2 * time.Second)
		if err := sendAs(102, "after a pause"); err != nil {
			t.Fatal(err)
		}
		if err := sendAs(103, "and no more"); !errors.Is(err, ErrWouldDrop) {
			t.Fatalf("got %v, want ErrWouldDrop", err)
		}
	})
	t.Run("the receiver admitted every send the mirror let through, and nothing else", func(t *testing.T) {
		want := map[string]bool{fmt.Sprintf("d0000000-0000-4000-8000-%012d", 102): true}
		for i := range burst {
			want[fmt.Sprintf("d0000000-0000-4000-8000-%012d", i)] = true
		}
		timeout := time.After(10 * time.Second)
		for len(want) > 0 {
			select {
			case ev := <-r.got:
				switch {
				case ev.Type == message.EventDrop:
					t.Fatalf("the receiver dropped %s (%s): the mirror let through what it would not take", ev.Drop.MsgID, ev.Drop.Reason)
				case ev.Type == message.EventMessage && !want[ev.Message.ID]:
					t.Fatalf("message %s arrived, which was refused or sent twice", ev.Message.ID)
				case ev.Type == message.EventMessage:
					delete(want, ev.Message.ID)
				}
			case <-timeout:
				t.Fatalf("%d messages never arrived", len(want))
			}
		}
	})
}
