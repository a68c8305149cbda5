package sessionsapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/cenkalti/backoff/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/oauth2"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/internal/clock"
)

// retryPolicy says after which failures a request may be sent again.
type retryPolicy uint8

const (
	// retryTransient is for idempotent requests (GET, PATCH, and posts whose
	// events all carry a uuid the server de-duplicates by): 429, 5xx and
	// transport failures are retried.
	retryTransient retryPolicy = iota + 1
	// retryUnsent is for requests that are not idempotent: only failures
	// that prove the server did not act are retried (429, a refused dial).
	retryUnsent
)

var retryWire = [...]string{retryTransient: "transient", retryUnsent: "unsent-only"}

func (p retryPolicy) String() string { return retryWire[p] }

// request is one API call.
type request struct {
	op     string // the method's name: span name and error prefix
	method string
	path   string // escaped, from the base URL's path on
	route  string // path template for the span, e.g. /v1/sessions/{id}
	query  url.Values
	body   []byte // nil: no body
	retry  retryPolicy
}

// transportError is a failure to get a response at all.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// isDialError says the connection was never made, so nothing was sent.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func retryable(p retryPolicy, err error) bool {
	var api *APIError
	if errors.As(err, &api) {
		switch {
		case api.Status == http.StatusTooManyRequests: // refused before any work
			return true
		case api.Status >= 500 && api.Status != http.StatusNotImplemented:
			return p == retryTransient
		}
		return false
	}
	var te *transportError
	if errors.As(err, &te) {
		return p == retryTransient || isDialError(te.err)
	}
	return false
}

// newBackOff spaces one operation's attempts: from 0.5 s doubling to at
// most 30 s, each within half of that either way, within MaxElapsed.
func (c *Client) newBackOff() backoff.BackOff {
	return clock.Backoff{Initial: 500 * time.Millisecond, Max: 30 * time.Second, Jitter: 0.5, MaxElapsed: c.elapsed}.New(c.clock)
}

// do sends r, retrying as its policy allows, and returns the body of the
// 2xx answer. It makes one span for the whole operation; every attempt
// carries that span's traceparent.
func (c *Client) do(ctx context.Context, r request) (_ []byte, err error) {
	ctx, span := c.tracer().Start(ctx, r.op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("http.request.method", r.method),
		attribute.String("url.template", r.route),
		attribute.String("server.address", c.base.Host)))
	sends := 0
	defer func() {
		span.SetAttributes(attribute.Int("sessionsapi.attempts", sends))
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()

	b := c.newBackOff()
	start := c.clock.Now()
	free := 0 // sends that do not count against MaxAttempts: the retry after a token refresh
	for {
		sends++
		body, tok, err := c.send(ctx, r)
		var api *APIError
		if errors.As(err, &api) {
			api.Attempts = sends
			span.SetAttributes(attribute.Int("http.response.status_code", api.Status))
		}
		if err == nil {
			span.SetAttributes(attribute.Int("http.response.status_code", http.StatusOK))
			return body, nil
		}
		if ctx.Err() != nil {
			return nil, c.fail(r, err, sends)
		}
		// A refused token gets one more try at once, with a fresh token,
		// whatever the policy: a 401 proves the request was not acted on.
		if api != nil && api.Status == http.StatusUnauthorized && free == 0 {
			if rs, ok := c.token.(auth.Refreshable); ok && c.refreshed(rs, tok) {
				free++
				c.log.InfoContext(ctx, "sessionsapi: token refused, retrying with a fresh one", "op", r.op)
				continue
			}
		}
		if sends-free >= c.attempts || !retryable(r.retry, err) {
			return nil, c.fail(r, err, sends)
		}
		wait, ok := c.wait(b, api, start)
		if !ok {
			return nil, c.fail(r, err, sends)
		}
		c.log.InfoContext(ctx, "sessionsapi: retrying", "op", r.op, "attempt", sends+1, "wait", wait, "err", err)
		if err := clock.Sleep(ctx, c.clock, wait); err != nil {
			return nil, c.fail(r, err, sends)
		}
	}
}

// wait is the delay before the next attempt: what Retry-After asked for on
// a 429 or 503, else the next exponential backoff with jitter. It says no
// when the wait would overrun MaxElapsed.
func (c *Client) wait(b backoff.BackOff, api *APIError, start time.Time) (time.Duration, bool) {
	if api != nil && api.RetryAfter > 0 && (api.Status == http.StatusTooManyRequests || api.Status == http.StatusServiceUnavailable) {
		if c.clock.Now().Sub(start)+api.RetryAfter > c.elapsed {
			return 0, false
		}
		return api.RetryAfter, true
	}
	d := b.NextBackOff()
	return d, d != backoff.Stop
}

// fail is the error a caller sees: an *APIError as it is, anything else
// prefixed with the operation.
func (c *Client) fail(r request, err error, sends int) error {
	var api *APIError
	if errors.As(err, &api) {
		return api
	}
	var te *transportError
	if errors.As(err, &te) {
		err = te.err
	}
	if sends > 1 {
		return fmt.Errorf("sessionsapi: %s: %w (after %d attempts)", r.op, err, sends)
	}
	return fmt.Errorf("sessionsapi: %s: %w", r.op, err)
}

// send makes one attempt. It returns the token it sent, for a 401.
func (c *Client) send(ctx context.Context, r request) ([]byte, *oauth2.Token, error) {
	u := c.base.String() + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, nil, err
	}
	tok, err := c.setHeaders(ctx, req.Header)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, tok, &transportError{err}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorResponse))
		io.Copy(io.Discard, io.LimitReader(resp.Body, MaxErrorResponse)) // lets a short remainder keep the connection
		return nil, tok, parseAPIError(r.op, resp.StatusCode, resp.Header, b, c.clock.Now())
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	if err != nil {
		return nil, tok, &transportError{err}
	}
	if len(b) > MaxResponse {
		return nil, tok, fmt.Errorf("%w: body larger than %d bytes", ErrBadResponse, MaxResponse)
	}
	return b, tok, nil
}

// call does r and decodes the answer into out, if out is not nil.
func (c *Client) call(ctx context.Context, r request, out any) error {
	b, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("sessionsapi: %s: %w: %v", r.op, ErrBadResponse, err)
	}
	return nil
}
