package mcp

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// running is a leg whose Run hands its events to a channel the test reads.
func running(t *testing.T) (*Leg, <-chan message.Event) {
	t.Helper()
	l := NewLeg(nil)
	events := make(chan message.Event, 1024)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = l.Run(ctx, events) }()
	t.Cleanup(func() { cancel(); <-done })
	testutil.Eventually(t, "the leg runs", l.emitter.Attached)
	return l, events
}

// replies records what a client's channel was sent.
type replies struct{ got []string }

func (r *replies) reply(_ context.Context, id string, b message.Behavior) error {
	r.got = append(r.got, id+"="+string(b))
	return nil
}

func TestChannelPromptsAreCappedPerClientAndInAll(t *testing.T) {
	l, _ := running(t)
	ctx := context.Background()
	var r replies
	for c := range MaxPrompts/MaxPromptsPerClient + 1 {
		me, err := l.Join(fmt.Sprintf("c%d", c), "stdio", nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range MaxPromptsPerClient + 1 {
			err := l.Prompt(ctx, me, message.PermissionRequest{RequestID: fmt.Sprint(i), ToolName: "Bash"}, r.reply)
			full := i == MaxPromptsPerClient || c == MaxPrompts/MaxPromptsPerClient
			if full != errors.Is(err, ErrTooManyPrompts) {
				t.Fatalf("client %d prompt %d: %v", c, i, err)
			}
		}
	}
	want := uint64(MaxPrompts/MaxPromptsPerClient + MaxPromptsPerClient + 1)
	if n := l.PromptsRefused(); n != want {
		t.Fatalf("%d refusals counted, want %d", n, want)
	}
	// A client that leaves frees its share.
	l.Leave(message.Session{Name: "c0", SessionID: l.clients["c0"].session.SessionID})
	last := l.clients[fmt.Sprintf("c%d", MaxPrompts/MaxPromptsPerClient)].session
	if err := l.Prompt(ctx, last, message.PermissionRequest{RequestID: "late", ToolName: "Bash"}, r.reply); err != nil {
		t.Fatalf("after a client left: %v", err)
	}
}

func TestAnAnswerReachesItsChannelOnceAndOnlyWhatTheChannelCarries(t *testing.T) {
	l, events := running(t)
	ctx := context.Background()
	me, _ := l.Join("laptop", "stdio", nil)
	var r replies
	if err := l.Prompt(ctx, me, message.PermissionRequest{RequestID: "abcde", ToolName: "Bash"}, r.reply); err != nil {
		t.Fatal(err)
	}
	ev := <-events
	req := *ev.Permission
	if req.Source != message.SourceChannel || req.State != message.PermissionPending || req.SessionID != me.SessionID || req.Name != "laptop" {
		t.Fatalf("raised %+v", req)
	}
	err := l.Answer(ctx, req, message.PermissionAnswer{Behavior: message.BehaviorDeny, Message: "no"})
	if ia := (*message.InvalidAnswerError)(nil); !errors.As(err, &ia) || ia.Problem != message.AnswerNotCarried {
		t.Fatalf("a deny with a message: %v", err)
	}
	if err := l.Answer(ctx, req, message.PermissionAnswer{Behavior: message.BehaviorDeny}); err != nil {
		t.Fatal(err)
	}
	err = l.Answer(ctx, req, message.PermissionAnswer{Behavior: message.BehaviorAllow})
	if ps := (*message.PromptSettledError)(nil); !errors.As(err, &ps) {
		t.Fatalf("a second answer: %v", err)
	}
	if len(r.got) != 1 || r.got[0] != "abcde=deny" {
		t.Fatalf("the channel got %v", r.got)
	}
}

func TestAReplyThatFailsLeavesThePromptWaiting(t *testing.T) {
	l, events := running(t)
	ctx := context.Background()
	me, _ := l.Join("flaky", "stdio", nil)
	fails := true
	reply := func(context.Context, string, message.Behavior) error {
		if fails {
			return errors.New("write: broken pipe")
		}
		return nil
	}
	_ = l.Prompt(ctx, me, message.PermissionRequest{RequestID: "zzzzz", ToolName: "Bash"}, reply)
	req := *(<-events).Permission
	allow := message.PermissionAnswer{Behavior: message.BehaviorAllow}
	if err := l.Answer(ctx, req, allow); err == nil {
		t.Fatal("a failed reply was taken for sent")
	}
	fails = false
	if err := l.Answer(ctx, req, allow); err != nil {
		t.Fatalf("the prompt did not wait for another answer: %v", err)
	}
}

func TestAClientThatLeavesWithdrawsItsPrompts(t *testing.T) {
	l, events := running(t)
	me, _ := l.Join("gone", "stdio", nil)
	var r replies
	_ = l.Prompt(context.Background(), me, message.PermissionRequest{RequestID: "a", ToolName: "Bash"}, r.reply)
	<-events
	l.Leave(me)
	ev := <-events
	if ev.Permission == nil || ev.Permission.State != message.PermissionCancelled || ev.Permission.RequestID != "a" {
		t.Fatalf("after leaving: %+v", ev)
	}
	if err := l.Prompt(context.Background(), me, message.PermissionRequest{RequestID: "b", ToolName: "Bash"}, r.reply); !errors.Is(err, ErrLeft) {
		t.Fatalf("a prompt of a client that left: %v", err)
	}
}

func TestAReplyThatFailsBecauseTheClientLeftWithdrawsThePrompt(t *testing.T) {
	l, events := running(t)
	ctx := context.Background()
	me, _ := l.Join("leaving", "stdio", nil)
	reply := func(context.Context, string, message.Behavior) error {
		l.Leave(me) // the connection closed under the answer
		return errors.New("write: broken pipe")
	}
	_ = l.Prompt(ctx, me, message.PermissionRequest{RequestID: "yyyyy", ToolName: "Bash"}, reply)
	req := *(<-events).Permission
	if err := l.Answer(ctx, req, message.PermissionAnswer{Behavior: message.BehaviorAllow}); err == nil {
		t.Fatal("a failed reply was taken for sent")
	}
	if ev := <-events; ev.Permission == nil || ev.Permission.State != message.PermissionCancelled {
		t.Fatalf("after the failed reply: %+v", ev)
	}
	l.prompts.mu.Lock()
	n := len(l.prompts.open)
	l.prompts.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d prompts still held for a client that left", n)
	}
}
