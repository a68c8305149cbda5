package recorder

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestAllReturnsACopyInOrder(t *testing.T) {
	var r Recorder[int]
	if got := r.All(); len(got) != 0 {
		t.Fatalf("All on an empty recorder = %v", got)
	}
	r.Add(1)
	r.Add(2)
	got := r.All()
	if !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("All = %v, want [1 2]", got)
	}
	got[0] = 99
	if r.All()[0] != 1 {
		t.Fatal("changing All's result changed the recorder")
	}
}

func TestAny(t *testing.T) {
	var r Recorder[string]
	r.Add("a")
	r.Add("b")
	tests := []struct {
		name string
		want string
		ok   bool
	}{
		{"finds an entry that was added", "b", true},
		{"does not find one that was not", "c", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Any(func(s string) bool { return s == tt.want }); got != tt.ok {
				t.Fatalf("Any(%q) = %v, want %v", tt.want, got, tt.ok)
			}
		})
	}
}

func TestWait(t *testing.T) {
	t.Run("returns an entry already added", func(t *testing.T) {
		var r Recorder[int]
		r.Add(1)
		r.Add(2)
		v, seen, err := r.Wait(t.Context(), func(n int) bool { return n == 2 })
		if err != nil || v != 2 || seen != 1 {
			t.Fatalf("Wait = %d, %d, %v; want 2, 1, nil", v, seen, err)
		}
	})
	t.Run("wakes on an entry added later", func(t *testing.T) {
		var r Recorder[int]
		r.Add(1)
		type result struct {
			v   int
			err error
		}
		done := make(chan result, 1)
		go func() {
			v, _, err := r.Wait(t.Context(), func(n int) bool { return n == 3 })
			done <- result{v, err}
		}()
		r.Add(2)
		r.Add(3)
		if got := <-done; got.err != nil || got.v != 3 {
			t.Fatalf("Wait = %d, %v; want 3, nil", got.v, got.err)
		}
	})
	t.Run("ends with the context's cause and the count it looked at", func(t *testing.T) {
		var r Recorder[int]
		r.Add(1)
		r.Add(2)
		cause := errors.New("test over")
		ctx, cancel := context.WithCancelCause(t.Context())
		cancel(cause)
		_, seen, err := r.Wait(ctx, func(int) bool { return false })
		if !errors.Is(err, cause) || seen != 2 {
			t.Fatalf("Wait = %d, %v; want 2, %v", seen, err, cause)
		}
	})
}
