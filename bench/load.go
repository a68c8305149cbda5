package main

import (
	"context"
	"errors"
	"sync"
	"time"
)

// rate is how many of these back-to-back operations run in a second.
func (l Latencies) rate() Rate {
	var sum time.Duration
	for _, d := range l {
		sum += d
	}
	return Rate{N: len(l), Span: sum}
}

// sequential times n sends of each sender, taking turns, each until the
// sink has read its frame: out[j] is senders[j]'s.
func sequential(ctx context.Context, sink frameSink, n int, senders ...func(int) error) ([]Latencies, error) {
	out := make([]Latencies, len(senders))
	for i := range n {
		for j, send := range senders {
			t0 := time.Now()
			if err := send(i); err != nil {
				return out, err
			}
			if err := sink.wait(ctx, 1); err != nil {
				return out, err
			}
			out[j] = append(out[j], time.Since(t0))
		}
	}
	return out, nil
}

// concurrent runs n sends over k senders at once and times them until the
// sink has read every frame.
func concurrent(ctx context.Context, sink frameSink, k, n int, send func(int) error) (Rate, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	i := 0
	t0 := time.Now()
	for range k {
		wg.Go(func() {
			for {
				mu.Lock()
				mine := i
				i++
				mu.Unlock()
				if mine >= n {
					return
				}
				if err := send(mine); err != nil {
					mu.Lock()
					errs = append(errs, err)
					i = n // the others stop too
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return settled(ctx, sink, n, t0, errs)
}

// settled is the Rate of n sends begun at t0 once the senders are done
// (errs, the first failure of any) and the sink has read every frame.
func settled(ctx context.Context, sink frameSink, n int, t0 time.Time, errs []error) (Rate, error) {
	if err := errors.Join(errs...); err != nil {
		return Rate{}, err
	}
	if err := sink.wait(ctx, n); err != nil {
		return Rate{}, err
	}
	return Rate{N: n, Span: time.Since(t0)}, nil
}
