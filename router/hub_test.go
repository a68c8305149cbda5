package router

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
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

func TestTheReplayIsBoundedByWeightAsWellAsCount(t *testing.T) {
	big := func(mib int) message.Event {
		return message.Event{Type: message.EventMessage, Message: &message.Message{Body: strings.Repeat("x", mib<<20)}}
	}
	tests := []struct {
		name   string
		events []message.Event
		want   []uint64 // kept ids
	}{
		{"small events are kept by count", []message.Event{{}, {}, {}}, []uint64{1, 2, 3}},
		{"heavy messages past the budget forget the oldest", []message.Event{big(12), big(12), big(12), big(12), big(1)}, []uint64{3, 4, 5}},
		{"a prompt weighs its input", []message.Event{big(20), {Type: message.EventPermission, Permission: &message.PermissionRequest{Input: json.RawMessage(strings.Repeat("1", 16<<20))}}}, []uint64{2}},
		{"the newest is kept even when it alone is over", []message.Event{big(1), big(40)}, []uint64{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHub(1024, 8)
			for _, ev := range tt.events {
				h.Publish(ev)
			}
			replay, _, sub := h.Subscribe(0)
			defer sub.Close()
			var got []uint64
			for _, ev := range replay {
				got = append(got, ev.ID)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("kept %v, want %v", got, tt.want)
			}
			if h.bytes > KeepEventBytes && h.n > 1 {
				t.Fatalf("holds %d bytes in %d events, over the budget", h.bytes, h.n)
			}
			for i, ev := range h.ring {
				if ev.Message != nil && !slices.Contains(tt.want, ev.ID) {
					t.Fatalf("slot %d still holds forgotten event %d", i, ev.ID)
				}
			}
		})
	}
}
