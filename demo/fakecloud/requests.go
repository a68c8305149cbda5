package fakecloud

import (
	"net/http"
	"strings"
	"time"
)

// requestLogSize is how many requests Requests keeps: the last ones.
const requestLogSize = 10_000

// Request is one request as the fake received it, credentials redacted.
type Request struct {
	Method   string
	Path     string
	RawQuery string
	// Header is a copy with the values of Authorization, Cookie and the
	// other credential headers replaced, so a test log can print it.
	Header http.Header
	Time   time.Time
}

// redacted replaces what a header value would leak.
const redacted = "[redacted]"

// credentialHeaders are redacted whole; Authorization keeps its scheme and
// Cookie its names, so a test can still assert "Bearer" or "sessionKey".
var credentialHeaders = []string{"X-Api-Key", "Proxy-Authorization"}

// requestLog is a ring of the last requestLogSize requests.
type requestLog struct {
	buf  []Request
	next int // where the next request goes once buf is full
}

func (l *requestLog) add(r Request) {
	if len(l.buf) < requestLogSize {
		l.buf = append(l.buf, r)
		return
	}
	l.buf[l.next] = r
	l.next = (l.next + 1) % requestLogSize
}

// all returns copies of the requests, oldest first.
func (l *requestLog) all() []Request {
	out := make([]Request, 0, len(l.buf))
	out = append(out, l.buf[l.next:]...)
	out = append(out, l.buf[:l.next]...)
	for i := range out {
		out[i].Header = out[i].Header.Clone()
	}
	return out
}

// record logs r; every request is logged, even one refused or failed.
func (s *Server) record(r *http.Request) {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	redactHeader(h)
	req := Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: h, Time: s.clock.Now()}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	s.log.add(req)
}

func redactHeader(h http.Header) {
	for i, v := range h.Values("Authorization") {
		scheme, _, found := strings.Cut(v, " ")
		if found {
			h["Authorization"][i] = scheme + " " + redacted
		} else {
			h["Authorization"][i] = redacted
		}
	}
	for i, v := range h.Values("Cookie") {
		parts := strings.Split(v, ";")
		for j, p := range parts {
			name, _, _ := strings.Cut(p, "=")
			parts[j] = name + "=" + redacted
		}
		h["Cookie"][i] = strings.Join(parts, ";")
	}
	for _, k := range credentialHeaders {
		if len(h.Values(k)) > 0 {
			h.Set(k, redacted)
		}
	}
}

// Requests returns the last 10,000 requests the fake received, oldest first:
// REST, the subscribe WebSocket and the v2 stream alike, including those it
// refused or failed by script.
func (s *Server) Requests() []Request {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.log.all()
}
