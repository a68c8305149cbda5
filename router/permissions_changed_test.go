package router

import (
	"testing"

	"github.com/sessiongateway/gateway/message"
)

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestPermissionsChanged(t *testing.T) {
	t.Run("the signal waits for a permission event, not any event", func(t *testing.T) {
		h := NewHub(4, 1)
		c := h.PermissionsChanged()
		h.Publish(message.Event{Type: message.EventMessage})
		if closed(c) {
			t.Fatal("closed by a message event")
		}
		h.Publish(message.Event{Type: message.EventPermission})
		if !closed(c) {
			t.Fatal("not closed by a permission event")
		}
	})
	t.Run("after a change the next signal is a fresh one", func(t *testing.T) {
		h := NewHub(4, 1)
		first := h.PermissionsChanged()
		if h.PermissionsChanged() != first {
			t.Fatal("two asks before a change got two signals")
		}
		h.Publish(message.Event{Type: message.EventPermission})
		next := h.PermissionsChanged()
		if closed(next) {
			t.Fatal("the signal taken after a change is already closed")
		}
		h.Publish(message.Event{Type: message.EventPermission})
		if !closed(next) {
			t.Fatal("the fresh signal missed the next change")
		}
	})
	t.Run("a permission event with nobody asking publishes as before", func(t *testing.T) {
		h := NewHub(4, 1)
		if ev := h.Publish(message.Event{Type: message.EventPermission}); ev.ID != 1 {
			t.Fatalf("id %d, want 1", ev.ID)
		}
	})
}
