package federation

import (
	"context"
	"testing"
	"time"
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
	v, err := retry(ctx, func(ctx context.Context) (string, error) {
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
