package stream

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Cause says why a connection failed to open or ended.
type Cause uint8

const (
	CauseCredentials Cause = iota + 1 // Config.Header failed
	CauseDial                         // the server could not be reached
	CauseOpenTimeout                  // not open within OpenTimeout
	CauseStatus                       // the dial got an HTTP error status
	CauseProtocol                     // the server answered with something that is not the stream
	CauseClosed                       // the server closed the connection (close frame, or end of an event stream)
	CauseDropped                      // the connection was lost without a close
	CauseStalled                      // no frame within StallTimeout
	CauseRecovery                     // History failed, so a gap could not be filled
)

var causeWire = [...]string{
	CauseCredentials: "credentials", CauseDial: "dial", CauseOpenTimeout: "open-timeout",
	CauseStatus: "http-status", CauseProtocol: "protocol", CauseClosed: "closed",
	CauseDropped: "dropped", CauseStalled: "stalled", CauseRecovery: "recovery",
}

func (c Cause) String() string {
	if int(c) >= len(causeWire) || causeWire[c] == "" {
		return fmt.Sprintf("Cause(%d)", uint8(c))
	}
	return causeWire[c]
}

// WebSocket close codes the stream does not retry: the server will refuse
// the next attempt the same way.
const (
	CloseProtocolError = 1002 // RFC 6455: we spoke the protocol wrongly
	CloseUnauthorized  = 4001 // claude.ai: credentials refused
	CloseForbidden     = 4003 // claude.ai: not allowed to see the session
)

// ConnError is why one connection attempt failed or one connection ended.
// It is Link.Err, GiveUpError.Last and PermanentError.Err.
type ConnError struct {
	Cause  Cause
	Status int // HTTP status (CauseStatus)
	Code   int // WebSocket close code (CauseClosed on the WebSocket)
	// Reason is the close reason or the server's error message.
	Reason string
	// RetryAfter is the server's Retry-After on a 429 or 503: the next
	// attempt waits at least this long.
	RetryAfter time.Duration
	Err        error
}

func (e *ConnError) Error() string {
	var s string
	switch e.Cause {
	case CauseStatus:
		s = fmt.Sprintf("HTTP %d %s", e.Status, http.StatusText(e.Status))
		if e.Reason != "" {
			s += ": " + e.Reason
		}
		return s
	case CauseClosed:
		if e.Code > 0 {
			s = fmt.Sprintf("closed by the server with code %d", e.Code)
			if e.Reason != "" {
				s += " (" + e.Reason + ")"
			}
			return s
		}
		s = "closed by the server"
	case CauseDropped:
		s = "connection lost"
	case CauseStalled:
		s = "no frame, not even a keep-alive, for too long"
	case CauseOpenTimeout:
		s = "connection not open in time"
	case CauseDial:
		s = "cannot connect"
	case CauseCredentials:
		s = "cannot get credentials"
	case CauseRecovery:
		s = "cannot fetch the missed events"
	case CauseProtocol:
		s = "the server did not answer with an event stream"
	default:
		s = e.Cause.String()
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *ConnError) Unwrap() error { return e.Err }

// permanent reports whether retrying cannot help: the request or the
// credentials are wrong, not the network.
func (e *ConnError) permanent() bool {
	if e == nil {
		return false
	}
	switch e.Status {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return true
	}
	if e.Status >= 300 && e.Status < 400 {
		return true // redirects are not followed
	}
	switch e.Code {
	case CloseProtocolError, CloseUnauthorized, CloseForbidden:
		return true
	}
	return false
}

// PermanentError ends Run when the server refused in a way a retry cannot
// change (HTTP 400, 401, 403, 404 or a redirect on the dial; WebSocket
// close 1002, 4001 or 4003). Its message says what to do.
type PermanentError struct {
	SessionID string
	Err       *ConnError
}

func (e *PermanentError) Error() string {
	what := "fix the configuration and follow the session again"
	switch {
	case e.Err.Status == http.StatusUnauthorized || e.Err.Code == CloseUnauthorized:
		what = "the credentials were refused: sign in again or replace the token (--remote-token-file or --remote-session-key-file), then follow the session again"
	case e.Err.Status == http.StatusForbidden || e.Err.Code == CloseForbidden:
		what = "access was denied: check --remote-org and that this account can see the session"
	case e.Err.Status == http.StatusNotFound:
		what = "no such session: check the id (gateway remote sessions lists them)"
	case e.Err.Status == http.StatusBadRequest:
		what = "the server refused the request: check --remote-url and --remote-org"
	case e.Err.Status >= 300 && e.Err.Status < 400:
		what = "the server redirected the stream, and redirects are not followed (they would carry the credentials): check --remote-url"
	case e.Err.Code == CloseProtocolError:
		what = "the server did not understand us: this gateway may be too old for it; upgrade it"
	}
	return fmt.Sprintf("remote session %s: %v; not retrying: %s", e.SessionID, e.Err, what)
}

func (e *PermanentError) Unwrap() error { return e.Err }

// GiveUpError ends Run after MaxRetries consecutive failed attempts.
type GiveUpError struct {
	SessionID string
	Attempts  int
	Last      error // the last attempt's *ConnError
}

func (e *GiveUpError) Error() string {
	return fmt.Sprintf("remote session %s: gave up after %d failed connection attempts in a row (last: %v); "+
		"check the network and --remote-url, then follow the session again", e.SessionID, e.Attempts, e.Last)
}

func (e *GiveUpError) Unwrap() error { return e.Last }

// Internal causes of a cancelled connection context.
var (
	errStalled     = errors.New("stalled")
	errIdle        = errors.New("idle")
	errOpenTimeout = errors.New("open timeout")
	errDone        = errors.New("connection finished")
)
