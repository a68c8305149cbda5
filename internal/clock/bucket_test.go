package clock_test

import (
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
)

func TestBucket(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	t.Run("a new limiter is full, and refills at Rate up to Burst", func(t *testing.T) {
		l := clock.Bucket{Rate: 0.5, Burst: 2}.Limiter()
		if !clock.Full(l, start) || !l.AllowN(start, 1) || !l.AllowN(start, 1) || l.AllowN(start, 1) {
			t.Fatal("a bucket of 2 did not let exactly 2 through at once")
		}
		if clock.Full(l, start.Add(3*time.Second)) || !clock.Full(l, start.Add(4*time.Second)) {
			t.Fatal("at 0.5 a second, 2 tokens take 4 s to come back")
		}
	})
	t.Run("OrDefault fills only what is unset", func(t *testing.T) {
		d := clock.Bucket{Rate: 1, Burst: 32}
		if got := (clock.Bucket{Burst: 5}).OrDefault(d); got != (clock.Bucket{Rate: 1, Burst: 5}) {
			t.Fatalf("OrDefault = %+v", got)
		}
		if got := (clock.Bucket{Rate: -1}).OrDefault(d); got != d {
			t.Fatalf("OrDefault = %+v", got)
		}
	})
	t.Run("a rate of zero or less is off", func(t *testing.T) {
		if !(clock.Bucket{}).Off() || !(clock.Bucket{Rate: -1, Burst: 5}).Off() || (clock.Bucket{Rate: 0.1}).Off() {
			t.Fatal("Off disagrees with the rate")
		}
	})
}
