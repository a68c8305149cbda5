package clock_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/sessiongateway/gateway/internal/clock"
	fake "github.com/sessiongateway/gateway/testkit/clock"
)

func waits(b backoff.BackOff, n int) []time.Duration {
	var out []time.Duration
	for range n {
		out = append(out, b.NextBackOff())
	}
	return out
}

func TestBackoffWaits(t *testing.T) {
	s := time.Second
	tests := []struct {
		name string
		b    clock.Backoff
		want []time.Duration
	}{
		{"it doubles by default, without a cap", clock.Backoff{Initial: s}, []time.Duration{s, 2 * s, 4 * s, 8 * s}},
		{"it stops growing at Max", clock.Backoff{Initial: s, Max: 3 * s}, []time.Duration{s, 2 * s, 3 * s, 3 * s}},
		{"it grows by Multiplier", clock.Backoff{Initial: 2 * s, Multiplier: 1.5}, []time.Duration{2 * s, 3 * s, 4500 * time.Millisecond, 6750 * time.Millisecond}},
		{"it stops after MaxRetries", clock.Backoff{Initial: s, MaxRetries: 2}, []time.Duration{s, 2 * s, backoff.Stop, backoff.Stop}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := waits(tt.b.New(nil), len(tt.want)); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("waits %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("Jitter and Spread keep each wait within their bounds", func(t *testing.T) {
		b := clock.Backoff{Initial: 4 * s, Max: 4 * s, Jitter: 0.5, Spread: s}.New(nil)
		for range 200 {
			if w := b.NextBackOff(); w < 2*s || w >= 7*s {
				t.Fatalf("wait %v outside [2s, 7s)", w)
			}
		}
	})
	t.Run("MaxElapsed counts on the clock it was given", func(t *testing.T) {
		c := fake.NewFakeClock(time.Time{})
		b := clock.Backoff{Initial: s, MaxElapsed: 10 * s}.New(c)
		if w := b.NextBackOff(); w != s {
			t.Fatalf("first wait %v", w)
		}
		c.Advance(9 * s)
		if w := b.NextBackOff(); w != backoff.Stop {
			t.Fatalf("a wait past MaxElapsed is %v, want Stop", w)
		}
	})
}

func TestRetry(t *testing.T) {
	errBusy := errors.New("busy")
	t.Run("it waits on the clock between calls until op succeeds", func(t *testing.T) {
		c := fake.NewFakeClock(time.Time{})
		calls, notified := 0, []time.Duration(nil)
		done := make(chan error, 1)
		go func() {
			done <- clock.Retry(context.Background(), c, clock.Backoff{Initial: time.Second}.New(c), func() error {
				if calls++; calls < 3 {
					return errBusy
				}
				return nil
			}, func(_ error, d time.Duration) { notified = append(notified, d) })
		}()
		for range 2 {
			for c.Pending() == 0 {
				time.Sleep(time.Millisecond)
			}
			c.Advance(time.Hour)
		}
		if err := <-done; err != nil || calls != 3 || !reflect.DeepEqual(notified, []time.Duration{time.Second, 2 * time.Second}) {
			t.Fatalf("Retry = %v after %d calls, waits %v", err, calls, notified)
		}
	})
	t.Run("a permanent error ends it at once, unwrapped", func(t *testing.T) {
		calls := 0
		err := clock.Retry(context.Background(), nil, clock.Backoff{Initial: time.Hour}.New(nil), func() error {
			calls++
			return backoff.Permanent(errBusy)
		}, nil)
		if err != errBusy || calls != 1 {
			t.Fatalf("Retry = %v after %d calls", err, calls)
		}
	})
	t.Run("it returns op's last error when the backoff stops", func(t *testing.T) {
		err := clock.Retry(context.Background(), nil, clock.Backoff{Initial: time.Microsecond, MaxRetries: 1}.New(nil), func() error { return errBusy }, nil)
		if err != errBusy {
			t.Fatalf("Retry = %v", err)
		}
	})
	t.Run("an ended context ends the wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		c := fake.NewFakeClock(time.Time{})
		err := clock.Retry(ctx, c, clock.Backoff{Initial: time.Hour}.New(c), func() error { return errBusy },
			func(error, time.Duration) { cancel() })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Retry = %v", err)
		}
	})
}
