package fakecloud

import "net/http"

// LivePath answers how many live connections the fake holds, as JSON
// {"websockets":N,"event_streams":M}: not claude.ai's, the fake's own, so
// a harness in another process can wait for thousands of followed
// sessions to be open.
const LivePath = "/fakecloud/live"

// Live counts the open subscribe WebSockets and v2 event streams.
func (s *Server) Live() (websockets, eventStreams int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.sessions {
		websockets += len(ss.subs)
		eventStreams += len(ss.streams)
	}
	return websockets, eventStreams
}

func (s *Server) live(w http.ResponseWriter, _ *http.Request) {
	ws, es := s.Live()
	writeJSON(w, http.StatusOK, map[string]int{"websockets": ws, "event_streams": es})
}
