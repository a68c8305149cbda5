package testutil

import (
	"slices"
	"time"
)

// Percentile is the p-quantile (0 to 1) of the latencies d, nearest rank;
// 0 for none. The benchmarks that time a send report it.
func Percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// Mean is the mean of the latencies d; 0 for none.
func Mean(d []time.Duration) time.Duration {
	var t time.Duration
	for _, x := range d {
		t += x
	}
	return t / time.Duration(max(1, len(d)))
}
