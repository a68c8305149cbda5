package clock

import (
	"testing"
	"time"
)

func TestReal(t *testing.T) {
	t.Run("a stopped timer reports that it was pending and never fires", func(t *testing.T) {
		fired := make(chan struct{}, 1)
		s := Real{}.AfterFunc(time.Hour, func() { fired <- struct{}{} })
		if !s.Stop() {
			t.Fatal("Stop() = false for a pending timer")
		}
		if s.Stop() {
			t.Fatal("second Stop() = true")
		}
	})
	t.Run("a due timer fires", func(t *testing.T) {
		fired := make(chan struct{})
		Real{}.AfterFunc(0, func() { close(fired) })
		<-fired
	})
}
