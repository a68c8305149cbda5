package router

import (
	"errors"
	"testing"

	"github.com/sessiongateway/gateway/message"
)

func TestHubReplaysAfterLastID(t *testing.T) {
	tests := []struct {
		name    string
		keep    int
		publish int
		last    int64
		want    []uint64
		gap     bool
	}{
		{"a new watcher gets nothing old", 4, 3, -1, nil, false},
		{"zero replays everything kept", 4, 3, 0, []uint64{1, 2, 3}, false},
		{"an id replays what came after it", 4, 3, 1, []uint64{2, 3}, false},
		{"an id older than what is kept reports a gap", 2, 5, 1, []uint64{4, 5}, true},
		{"an up-to-date id replays nothing and no gap", 4, 3, 3, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHub(tt.keep, 8)
			for range tt.publish {
				h.Publish(message.Event{Type: message.EventMessage})
			}
			replay, gap, sub := h.Subscribe(tt.last)
			defer sub.Close()
			var got []uint64
			for _, ev := range replay {
				got = append(got, ev.ID)
			}
			if len(got) != len(tt.want) || gap != tt.gap {
				t.Fatalf("replay %v gap %v, want %v gap %v", got, gap, tt.want, tt.gap)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("replay %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestASlowWatcherIsCutOffNotWaitedOn(t *testing.T) {
	h := NewHub(4, 2)
	_, _, slow := h.Subscribe(-1)
	_, _, fast := h.Subscribe(-1)
	for range 3 {
		h.Publish(message.Event{Type: message.EventMessage})
		<-fast.C
	}
	n := 0
	for range slow.C {
		n++
	}
	if n != 2 || !errors.Is(slow.Err(), ErrSlowWatcher) {
		t.Fatalf("slow watcher got %d events, err %v; want 2 then cut off", n, slow.Err())
	}
	fast.Close()
	if fast.Err() != nil {
		t.Fatalf("closed watcher err = %v", fast.Err())
	}
}
