package qwen

import (
	"time"
)

// elapsed is how long ago then was, as Qwen Code measures hold ages and the
// duplicate window: the larger of the monotonic and the wall-clock
// difference. The monotonic clock stops across a suspend and the wall clock
// can step back; taking the larger lets a suspend count as elapsed time and
// makes a backward step harmless.
func elapsed(now, then time.Time) time.Duration {
	mono := now.Sub(then)
	wall := now.Round(0).Sub(then.Round(0))
	return max(mono, wall)
}
