package router

import "errors"

// ErrShuttingDown ends every event subscription when the gateway stops, so
// a long-lived watch does not hold the API's drain until its deadline.
var ErrShuttingDown = errors.New("the gateway is shutting down: reconnect with Last-Event-ID to resume once it is back")

// CloseAll ends every subscription with err, and every later one at once.
func (h *Hub) CloseAll(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = err
	for s := range h.subs {
		s.closeLocked(err)
	}
}
