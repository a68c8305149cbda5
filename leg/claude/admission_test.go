package claude

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	iclock "github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/clock"
)

func newTestGuard(self ...string) (*Guard, *clock.FakeClock) {
	clk := clock.NewFakeClock(time.Time{})
	return NewGuard(Limits{}, clk, func() []string { return self }), clk
}

// Claude Code's own limits, and the Qwen leg's shared bucket and hold caps.
func TestDefaultLimitsAreClaudeCodesAndTheQwenLegs(t *testing.T) {
	want := Limits{Sender: iclock.Bucket{Rate: 0.5, Burst: 30}, DedupWindow: 30 * time.Second,
		MaxSelfHops: 10, MaxChainLength: 28, MaxTrackedSenders: 256, MaxQueued: 50,
		Global: iclock.Bucket{Rate: 1, Burst: 32}, MaxHeld: 50, MaxHeldBytes: 8 << 20}
	if got := DefaultLimits(); got != want {
		t.Fatalf("DefaultLimits() = %+v, want %+v", got, want)
	}
	g, _ := newTestGuard()
	if got := g.Limits(); got != want {
		t.Fatalf("zero Limits became %+v, want the defaults", got)
	}
}

func TestGuardRateLimit(t *testing.T) {
	t.Run("a 35-message burst against 30 tokens drops exactly the last 5", func(t *testing.T) {
		g, _ := newTestGuard()
		var dropped []int
		for i := range 35 {
			r, d := g.Admit("from:a", "body "+strconv.Itoa(i), nil, 0)
			if d {
				if r != message.DropRateLimited {
					t.Fatalf("message %d dropped for %v", i, r)
				}
				dropped = append(dropped, i)
			}
		}
		if fmt.Sprint(dropped) != "[30 31 32 33 34]" {
			t.Fatalf("dropped %v", dropped)
		}
	})
	t.Run("two seconds after running dry a sender has exactly one token", func(t *testing.T) {
		g, clk := newTestGuard()
		for i := range 30 {
			if r, d := g.Admit("from:a", strconv.Itoa(i), nil, 0); d {
				t.Fatalf("message %d dropped: %v", i, r)
			}
		}
		clk.Advance(1999 * time.Millisecond)
		if r, d := g.Admit("from:a", "early", nil, 0); !d || r != message.DropRateLimited {
			t.Fatalf("after 1.999 s: %v %v, want rate-limited", r, d)
		}
		clk.Advance(time.Millisecond)
		if _, d := g.Admit("from:a", "on time", nil, 0); d {
			t.Fatal("after 2 s the message was dropped")
		}
		if r, d := g.Admit("from:a", "one too many", nil, 0); !d || r != message.DropRateLimited {
			t.Fatalf("second message after 2 s: %v %v, want rate-limited", r, d)
		}
	})
	t.Run("a bucket refills to its capacity and no further", func(t *testing.T) {
		g, clk := newTestGuard()
		g.Admit("from:a", "first", nil, 0)
		clk.Advance(time.Hour)
		n := 0
		for i := range 40 {
			if _, d := g.Admit("from:a", strconv.Itoa(i), nil, 0); !d {
				n++
			}
		}
		if n != 30 {
			t.Fatalf("admitted %d after a long rest, want 30", n)
		}
	})
	t.Run("senders have separate buckets", func(t *testing.T) {
		g, _ := newTestGuard()
		for i := range 30 {
			g.Admit("from:a", strconv.Itoa(i), nil, 0)
		}
		if _, d := g.Admit("from:b", "x", nil, 0); d {
			t.Fatal("b was dropped for a's burst")
		}
	})
	t.Run("a rate-limited message costs no token", func(t *testing.T) {
		g, clk := newTestGuard()
		for i := range 30 {
			g.Admit("from:a", strconv.Itoa(i), nil, 0)
		}
		for i := range 10 {
			g.Admit("from:a", "refused "+strconv.Itoa(i), nil, 0)
		}
		clk.Advance(2 * time.Second)
		if _, d := g.Admit("from:a", "after", nil, 0); d {
			t.Fatal("refused messages spent the refill")
		}
	})
}

func TestGuardDuplicate(t *testing.T) {
	t.Run("the same body from the same sender within 30 s is a duplicate", func(t *testing.T) {
		g, clk := newTestGuard()
		g.Admit("from:a", "hi", nil, 0)
		clk.Advance(29999 * time.Millisecond)
		if r, d := g.Admit("from:a", "hi", nil, 0); !d || r != message.DropDuplicate {
			t.Fatalf("got %v %v, want duplicate", r, d)
		}
	})
	t.Run("the same body 30 s later is admitted", func(t *testing.T) {
		g, clk := newTestGuard()
		g.Admit("from:a", "hi", nil, 0)
		clk.Advance(30 * time.Second)
		if r, d := g.Admit("from:a", "hi", nil, 0); d {
			t.Fatalf("dropped: %v", r)
		}
	})
	t.Run("a duplicate does not restart the window", func(t *testing.T) {
		g, clk := newTestGuard()
		g.Admit("from:a", "hi", nil, 0)
		clk.Advance(20 * time.Second)
		g.Admit("from:a", "hi", nil, 0)
		clk.Advance(10 * time.Second)
		if r, d := g.Admit("from:a", "hi", nil, 0); d {
			t.Fatalf("dropped at 30 s after the admitted one: %v", r)
		}
	})
	t.Run("the same body from another sender is admitted", func(t *testing.T) {
		g, _ := newTestGuard()
		g.Admit("from:a", "hi", nil, 0)
		if r, d := g.Admit("from:b", "hi", nil, 0); d {
			t.Fatalf("dropped: %v", r)
		}
	})
	t.Run("only the last admitted body counts", func(t *testing.T) {
		g, _ := newTestGuard()
		g.Admit("from:a", "one", nil, 0)
		g.Admit("from:a", "two", nil, 0)
		if r, d := g.Admit("from:a", "one", nil, 0); d {
			t.Fatalf("dropped: %v", r)
		}
	})
	t.Run("a duplicate costs no token", func(t *testing.T) {
		g, _ := newTestGuard()
		g.Admit("from:a", "hi", nil, 0)
		for range 40 {
			g.Admit("from:a", "hi", nil, 0)
		}
		n := 0
		for i := range 30 {
			if _, d := g.Admit("from:a", strconv.Itoa(i), nil, 0); !d {
				n++
			}
		}
		if n != 29 {
			t.Fatalf("admitted %d new bodies after duplicates, want 29", n)
		}
	})
}

func TestGuardHops(t *testing.T) {
	chain := func(n int, tok string) []string {
		c := make([]string, n)
		for i := range c {
			c[i] = tok
		}
		return c
	}
	self := "aaaaaaaaaaaaaaaaaaaaaaaa"
	other := "bbbbbbbbbbbbbbbbbbbbbbbb"
	tests := []struct {
		name  string
		chain []string
		want  message.DropReason // 0: admitted
	}{
		{"a 28-entry chain is admitted", chain(28, other), 0},
		{"a 29-entry chain is a runaway", chain(29, other), message.DropHopRunaway},
		{"one occurrence of our own token is harmless", append(chain(5, other), self), 0},
		{"nine occurrences of our own token are admitted", chain(9, self), 0},
		{"ten occurrences of our own token are a loop", chain(10, self), message.DropHopLoop},
		{"twelve occurrences of our own token are a loop", chain(12, self), message.DropHopLoop},
		{"a chain that is both too long and a loop counts as a runaway", chain(29, self), message.DropHopRunaway},
		{"two self tokens count together", append(chain(5, self), chain(5, "cccccccccccccccccccccccc")...), message.DropHopLoop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, _ := newTestGuard(self, "cccccccccccccccccccccccc")
			r, d := g.Admit("from:a", "x", tt.chain, 0)
			if d != (tt.want != 0) || r != tt.want {
				t.Fatalf("Admit = %v, %v; want %v", r, d, tt.want)
			}
			if tt.want != 0 && g.Tracked() != 0 {
				t.Fatal("a hop drop touched the sender table")
			}
		})
	}
	t.Run("with no self tokens only the length counts", func(t *testing.T) {
		g := NewGuard(Limits{}, clock.NewFakeClock(time.Time{}), nil)
		if r, d := g.Admit("from:a", "x", chain(20, self), 0); d {
			t.Fatalf("dropped: %v", r)
		}
	})
}

func TestGuardQueueFull(t *testing.T) {
	t.Run("a message arriving with 50 queued is dropped", func(t *testing.T) {
		g, _ := newTestGuard()
		if r, d := g.Admit("from:a", "x", nil, 50); !d || r != message.DropQueueFull {
			t.Fatalf("got %v %v, want queue-full", r, d)
		}
	})
	t.Run("a message arriving with 49 queued is admitted", func(t *testing.T) {
		g, _ := newTestGuard()
		if r, d := g.Admit("from:a", "x", nil, 49); d {
			t.Fatalf("dropped: %v", r)
		}
	})
	t.Run("a queue-full drop spends the token and remembers the body, as Claude Code does", func(t *testing.T) {
		g, _ := newTestGuard()
		g.Admit("from:a", "x", nil, 50)
		if r, d := g.Admit("from:a", "x", nil, 0); !d || r != message.DropDuplicate {
			t.Fatalf("resend after queue-full: %v %v, want duplicate", r, d)
		}
		n := 0
		for i := range 40 {
			if _, d := g.Admit("from:a", strconv.Itoa(i), nil, 0); !d {
				n++
			}
		}
		if n != 29 {
			t.Fatalf("admitted %d, want 29 after the queue-full drop spent one token", n)
		}
	})
}

// A fresh sender name on every frame once got a fresh bucket every time:
// 4,963 of 5,000 such frames were delivered. The shared bucket stops them.
func TestGuardGlobalBucket(t *testing.T) {
	g, clk := newTestGuard()
	admitted := 0
	for i := range 100 {
		r, d := g.Admit("from:"+strconv.Itoa(i), "x", nil, 0)
		switch {
		case !d:
			admitted++
		case r != message.DropRateLimited:
			t.Fatalf("sender %d dropped for %v", i, r)
		}
	}
	if admitted != 32 {
		t.Fatalf("100 senders of one message each: %d admitted, want the shared burst of 32", admitted)
	}
	clk.Advance(999 * time.Millisecond)
	if r, d := g.Admit("from:late", "x", nil, 0); !d || r != message.DropRateLimited {
		t.Fatalf("after 0.999 s: %v %v, want rate-limited", r, d)
	}
	clk.Advance(time.Millisecond)
	if r, d := g.Admit("from:later", "x", nil, 0); d {
		t.Fatalf("after 1 s: %v, want the one token the shared bucket earned back", r)
	}
	if r, d := g.Admit("from:latest", "x", nil, 0); !d || r != message.DropRateLimited {
		t.Fatalf("the token spent: %v %v, want rate-limited", r, d)
	}
}

func TestGuardEviction(t *testing.T) {
	t.Run("the 257th sender evicts the least recently seen one, which starts afresh", func(t *testing.T) {
		// A shared bucket big enough for 257 senders: this is about theirs.
		g := NewGuard(Limits{Global: iclock.Bucket{Burst: 1 << 20}}, clock.NewFakeClock(time.Time{}), nil)
		for i := range 30 {
			g.Admit("from:0", strconv.Itoa(i), nil, 0) // sender 0 runs dry
		}
		for i := 1; i < 256; i++ {
			g.Admit("from:"+strconv.Itoa(i), "x", nil, 0)
		}
		if g.Tracked() != 256 {
			t.Fatalf("tracking %d", g.Tracked())
		}
		if r, d := g.Admit("from:0", "still dry", nil, 0); !d || r != message.DropRateLimited {
			t.Fatalf("sender 0 before eviction: %v %v", r, d) // and 0 is now the most recent
		}
		g.Admit("from:256", "x", nil, 0) // evicts sender 1, the least recently seen
		if g.Tracked() != 256 {
			t.Fatalf("tracking %d after eviction", g.Tracked())
		}
		if r, d := g.Admit("from:0", "still dry", nil, 0); !d || r != message.DropRateLimited {
			t.Fatalf("sender 0 was evicted although recently seen: %v %v", r, d)
		}
		if r, d := g.Admit("from:1", "x", nil, 0); d {
			t.Fatalf("evicted sender 1 resending its body within the window: %v, want a fresh start", r)
		}
	})
}

func TestGuardConcurrentUse(t *testing.T) {
	g, _ := newTestGuard()
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for w := range 8 {
		wg.Go(func() {
			for i := range 10 {
				if _, d := g.Admit("from:shared", fmt.Sprint(w, i), nil, 0); !d {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if admitted != 30 {
		t.Fatalf("80 concurrent messages from one sender admitted %d, want 30", admitted)
	}
}
