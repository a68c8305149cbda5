package sessionsapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Errors to match with errors.Is. An *APIError matches the sentinel of its
// status class; the others come wrapped with the operation's name.
var (
	ErrBadRequest   = errors.New("request refused as invalid")           // 400, 409, 413, 422
	ErrUnauthorized = errors.New("credentials refused")                  // 401
	ErrForbidden    = errors.New("not allowed for these credentials")    // 403
	ErrNotFound     = errors.New("not found")                            // 404
	ErrRateLimited  = errors.New("rate limited")                         // 429
	ErrServer       = errors.New("server error")                         // 5xx, 529
	ErrConfig       = errors.New("invalid client configuration")         // from New
	ErrInvalidEvent = errors.New("event refused before sending")         // an event that cannot be canonicalised or is not an object
	ErrBadResponse  = errors.New("response is not what the API returns") // undecodable, too large, or paging that does not advance
	ErrNoID         = errors.New("empty id")
)

// statusClass maps a status to its sentinel: the one table of what a
// status means to a caller.
func statusClass(status int) error {
	switch {
	case status == http.StatusUnauthorized:
		return ErrUnauthorized
	case status == http.StatusForbidden:
		return ErrForbidden
	case status == http.StatusNotFound:
		return ErrNotFound
	case status == http.StatusTooManyRequests:
		return ErrRateLimited
	case status >= 500:
		return ErrServer
	case status >= 400:
		return ErrBadRequest
	}
	return nil
}

// hint says what to do about a status, for people reading the error.
func hint(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "check the token or session key, or log in again"
	case http.StatusForbidden:
		return "check the organisation uuid and that this account may use the session"
	case http.StatusTooManyRequests:
		return "slow down and retry later"
	}
	return ""
}

// APIError is an error answer from the Sessions API, parsed from its
// {"type":"error","error":{"type","message"}} body.
type APIError struct {
	Op         string        // the client method, e.g. "GetSession"
	Status     int           // HTTP status
	Type       string        // the error type as the server spelt it, e.g. "not_found_error"; may be empty
	Message    string        // the server's message, shortened and made printable
	RetryAfter time.Duration // from Retry-After, 0 when absent
	RequestID  string        // the server's request-id header, for support
	Attempts   int           // how many times the request was sent
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sessionsapi: %s: HTTP %d", e.Op, e.Status)
	if e.Type != "" {
		b.WriteString(" " + e.Type)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %v)", e.RetryAfter)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	if h := hint(e.Status); h != "" {
		b.WriteString("; " + h)
	}
	if e.RequestID != "" {
		b.WriteString(" [request-id " + e.RequestID + "]")
	}
	return b.String()
}

// Is matches the sentinel of e's status class.
func (e *APIError) Is(target error) bool {
	c := statusClass(e.Status)
	return c != nil && c == target
}

// maxMessage bounds what of the server's error message an error repeats.
const maxMessage = 512

// parseAPIError builds the error for a non-2xx answer. body is whatever the
// server sent (possibly truncated, possibly not JSON); it never fails.
func parseAPIError(op string, status int, h http.Header, body []byte, now time.Time) *APIError {
	e := &APIError{Op: op, Status: status, RequestID: printable(h.Get("request-id"), 128)}
	if ra, ok := parseRetryAfter(h.Get("Retry-After"), now); ok {
		e.RetryAfter = ra
	}
	var wire struct {
		Type  string `json:"type"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &wire) == nil && wire.Error != nil {
		e.Type = printable(wire.Error.Type, 64)
		e.Message = printable(wire.Error.Message, maxMessage)
	}
	return e
}

// printable makes a server-sent string safe to print in one line.
func printable(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return strings.TrimSpace(s)
}

// maxRetryAfter bounds a Retry-After we believe; a larger one is clamped
// (and then exceeds any elapsed budget, so the caller gives up and sees it).
const maxRetryAfter = 24 * time.Hour

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP date
// (RFC 9110 section 10.2.3). A date in the past means now.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) && strings.Trim(v, "0123456789") == "" {
				return maxRetryAfter, true
			}
			return 0, false
		}
		if n > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	switch {
	case d < 0:
		return 0, true
	case d > maxRetryAfter:
		return maxRetryAfter, true
	}
	return d, true
}

// EventError is an event PostEvents, PostCodeEvents or CreateSession
// refused before anything was sent.
type EventError struct {
	Op    string
	Index int // position in the call's events
	Err   error
}

func (e *EventError) Error() string {
	return fmt.Sprintf("sessionsapi: %s: event %d: %v; nothing was sent", e.Op, e.Index, e.Err)
}

func (e *EventError) Unwrap() error { return e.Err }
