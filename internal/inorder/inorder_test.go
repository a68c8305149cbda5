package inorder

import (
	"context"
	"testing"
)

func TestQueuedCallsTheFunctionTheContextCarries(t *testing.T) {
	calls := 0
	ctx := WithQueued(context.Background(), func() { calls++ })
	ctx, cancel := context.WithCancel(ctx) // carried through derived contexts
	defer cancel()
	Queued(ctx)
	if calls != 1 {
		t.Fatalf("calls = %d, want 1", calls)
	}
}

func TestQueuedWithoutAFunctionDoesNothing(t *testing.T) {
	Queued(context.Background()) // must not panic
}
