package legtest

import (
	"bytes"
	"runtime"
	"strings"
	"time"
)

// goroutines is every goroutine's id and stack, from runtime.Stack.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		head, _, _ := bytes.Cut(g, []byte(" ["))
		out[string(head)] = string(g)
	}
	return out
}

// leftBehind waits up to d for the goroutines not in before to end, and
// returns the stacks of those still running: goroutines of the leg that
// outlived its Run. Those running code of a foreign package (a server the
// factory runs in this process, which the leg's connections make start
// goroutines of its own) are not the leg's.
func leftBehind(before map[string]string, foreign []string, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		var left []string
		for id, stack := range goroutines() {
			if _, old := before[id]; old || isForeign(stack, foreign) {
				continue
			}
			left = append(left, stack)
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func isForeign(stack string, foreign []string) bool {
	for _, p := range foreign {
		if strings.Contains(stack, p) {
			return true
		}
	}
	return false
}
