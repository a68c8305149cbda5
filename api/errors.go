package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"syscall"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/addressing/didfile"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// Error is the JSON body of every 4xx and 5xx answer.
type Error struct {
	Error       string   `json:"error"`
	Code        string   `json:"code"`
	Suggestions []string `json:"suggestions,omitempty"`
	Candidates  []string `json:"candidates,omitempty"`
	// MissingScope names the scope a 403 wanted.
	MissingScope string `json:"missing_scope,omitempty"`
	// RetryAfter is a 429's wait in whole seconds, also in Retry-After.
	RetryAfter int `json:"retry_after,omitempty"`
}

// Error codes; the HTTP status is chosen from them in one place, statusOf.
const (
	CodeBadRequest       = "bad_request"
	CodeBadAddress       = "bad_address"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeAmbiguous        = "ambiguous"
	CodeTooLarge         = "too_large"
	CodeUnauth           = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeBadHost          = "bad_host"
	CodeConflict         = "conflict"
	CodeTimeout          = "timeout"
	CodeBadGateway       = "bad_gateway" // a leg could not carry a request to its session
	CodeInternal         = "internal"
	CodeRateLimited      = "rate_limited"
	// CodeRequestTimeout: the request's body did not arrive within the
	// server's read timeout.
	CodeRequestTimeout = "request_timeout"
	// CodeStorageFull: the message was not accepted because a store had
	// no room (the state disk full, the outbox at its cap); 507.
	CodeStorageFull = "storage_full"
	// CodeNotStored: the message was not accepted because a store could
	// not write it; 503. Nothing was sent: the same send may work later.
	CodeNotStored = "not_stored"
	// CodeKeyReused: an Idempotency-Key sent again with another body; 422.
	CodeKeyReused = "idempotency_key_reused"
	// CodeUnavailable: a resolver the request needs cannot answer now (a
	// did file gone missing or broken while serving).
	CodeUnavailable = "unavailable"
)

var codeStatus = map[string]int{
	CodeBadRequest: http.StatusBadRequest, CodeBadAddress: http.StatusBadRequest,
	CodeNotFound: http.StatusNotFound, CodeMethodNotAllowed: http.StatusMethodNotAllowed, CodeAmbiguous: http.StatusConflict,
	CodeTooLarge: http.StatusRequestEntityTooLarge, CodeUnauth: http.StatusUnauthorized,
	CodeForbidden: http.StatusForbidden, CodeBadHost: http.StatusMisdirectedRequest,
	CodeConflict: http.StatusConflict, CodeTimeout: http.StatusGatewayTimeout,
	CodeBadGateway: http.StatusBadGateway, CodeInternal: http.StatusInternalServerError,
	CodeUnavailable: http.StatusServiceUnavailable, CodeRateLimited: http.StatusTooManyRequests,
	CodeRequestTimeout: http.StatusRequestTimeout, CodeStorageFull: http.StatusInsufficientStorage,
	CodeNotStored: http.StatusServiceUnavailable, CodeKeyReused: http.StatusUnprocessableEntity,
}

// errorOf maps an error from below to what the client sees.
func errorOf(err error) Error {
	var (
		pe *addressing.ParseError
		nf *addressing.NotFoundError
		am *addressing.AmbiguousError
		mb *http.MaxBytesError
		le *router.LegError
		ia *message.InvalidAnswerError
		ic *router.InvalidControlError
		is *router.InvalidSessionError
		re *router.RefusedError
	)
	switch {
	case errors.As(err, &mb):
		return Error{Error: "request body too large", Code: CodeTooLarge}
	case errors.Is(err, errKeyMismatch):
		return Error{Error: err.Error(), Code: CodeKeyReused}
	case errors.Is(err, errKeyBusy):
		return Error{Error: err.Error(), Code: CodeConflict}
	case errors.As(err, new(slowBody)):
		return Error{Error: err.Error(), Code: CodeRequestTimeout}
	case errors.Is(err, message.ErrNotAccepted):
		if errors.Is(err, message.ErrOutboxFull) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			return Error{Error: err.Error(), Code: CodeStorageFull}
		}
		return Error{Error: err.Error(), Code: CodeNotStored}
	case errors.Is(err, message.ErrNoControlAnswer):
		return Error{Error: err.Error(), Code: CodeTimeout}
	case errors.As(err, &re): // a leg turned down what it was asked: whatever it says, a conflict
		return Error{Error: err.Error(), Code: CodeConflict}
	case errors.As(err, &le): // before the rest: whatever the leg hit, the leg failed
		return Error{Error: err.Error(), Code: CodeBadGateway}
	case errors.Is(err, message.ErrNoPermission):
		return Error{Error: err.Error(), Code: CodeNotFound}
	case errors.Is(err, message.ErrPermissionSettled):
		return Error{Error: err.Error(), Code: CodeConflict}
	case errors.Is(err, message.ErrTooManyHosted):
		return Error{Error: err.Error(), Code: CodeConflict}
	case errors.Is(err, message.ErrBadStart), errors.Is(err, message.ErrAgentMissing), errors.Is(err, message.ErrNotStarted):
		return Error{Error: err.Error(), Code: CodeBadRequest}
	case errors.Is(err, message.ErrNoStarter):
		return Error{Error: err.Error(), Code: CodeNotFound}
	case errors.As(err, &ia), errors.As(err, &ic), errors.As(err, &is), errors.Is(err, message.ErrNotControllable), errors.Is(err, router.ErrNotLifecycled),
		errors.Is(err, router.ErrNoIdleNotices):
		return Error{Error: err.Error(), Code: CodeBadRequest}
	case errors.As(err, &pe):
		return Error{Error: err.Error(), Code: CodeBadAddress}
	case errors.As(err, &nf):
		return Error{Error: err.Error(), Code: CodeNotFound, Suggestions: nf.Suggestions}
	case errors.As(err, &am):
		return Error{Error: err.Error(), Code: CodeAmbiguous, Candidates: am.Candidates}
	case errors.Is(err, router.ErrNoLeg), errors.Is(err, message.ErrNoLifecycle), errors.Is(err, router.ErrUnknownMessage), errors.Is(err, router.ErrNotHeld),
		errors.Is(err, addressing.ErrNoDIDResolver):
		return Error{Error: err.Error(), Code: CodeNotFound}
	case errors.Is(err, addressing.ErrUnsupported): // a pipe address off Windows
		return Error{Error: err.Error(), Code: CodeBadAddress}
	case errors.Is(err, context.DeadlineExceeded):
		return Error{Error: err.Error(), Code: CodeTimeout}
	case errors.Is(err, didfile.ErrUnavailable):
		return Error{Error: err.Error(), Code: CodeUnavailable}
	}
	return Error{Error: err.Error(), Code: CodeInternal}
}

// writeJSON answers v as one line of compact JSON. Programs read the API
// (the CLI indents what it prints); indenting every answer cost as much
// as decoding the request.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e Error) {
	st, ok := codeStatus[e.Code]
	if !ok {
		st = http.StatusInternalServerError
	}
	writeJSON(w, st, e)
}
