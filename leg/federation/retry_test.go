package federation

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sessiongateway/gateway/internal/clock"
	fakeclock "github.com/sessiongateway/gateway/testkit/clock"
)

// TestARequestWhoseReplyIsLostIsMadeAgainWithinTheCallersDeadline: the
// first attempt's reply never comes (a leader elected meanwhile); the
// second is answered. The caller's deadline is far off, yet the second
// attempt is made after attemptTimeout, not after that deadline.
func TestARequestWhoseReplyIsLostIsMadeAgainWithinTheCallersDeadline(t *testing.T) {
	defer func(d time.Duration) { attemptTimeout = d }(attemptTimeout)
	attemptTimeout = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	attempts := 0
	start := time.Now()
	v, err := retry(ctx, clock.Real{}, func(ctx context.Context) (string, error) {
		attempts++
		if attempts == 1 {
			<-ctx.Done() // no reply: the request waits as long as it may
			return "", ctx.Err()
		}
		return "stored", nil
	})
	if err != nil || v != "stored" || attempts != 2 {
		t.Fatalf("retry = %q, %v after %d attempts", v, err, attempts)
	}
	if waited := time.Since(start); waited > 30*time.Second {
		t.Fatalf("the second attempt came after %v: the first spent the caller's deadline", waited)
	}
}

// TestRetryWaitsDoubleOnTheNodesClock: between tries of a transient
// error retry waits 100 ms, then twice as long each time up to 2 s, on
// the clock it is given; an error that is not transient ends it at once.
func TestRetryWaitsDoubleOnTheNodesClock(t *testing.T) {
	c := fakeclock.NewFakeClock(time.Time{})
	tries := make(chan int)
	done := make(chan error, 1)
	go func() {
		n := 0
		_, err := retry(context.Background(), c, func(context.Context) (struct{}, error) {
			n++
			tries <- n
			if n == 8 {
				return struct{}{}, errors.New("for good")
			}
			return struct{}{}, nats.ErrTimeout
		})
		done <- err
	}()
	<-tries
	for i, wait := range []time.Duration{100, 200, 400, 800, 1600, 2000, 2000} {
		wait *= time.Millisecond
		for c.Pending() == 0 { // the retry's wait is armed
			time.Sleep(time.Millisecond)
		}
		c.Advance(wait - time.Millisecond)
		select {
		case n := <-tries:
			t.Fatalf("try %d came before its wait of %v", n, wait)
		case <-time.After(10 * time.Millisecond):
		}
		c.Advance(time.Millisecond)
		if n := <-tries; n != i+2 {
			t.Fatalf("try %d after wait %d", n, i+1)
		}
	}
	if err := <-done; err == nil || err.Error() != "for good" {
		t.Fatalf("retry = %v, want the error that is not transient", err)
	}
}
