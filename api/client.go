package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// Client talks to a running gateway.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// NewUnixClient talks over the control socket at path.
func NewUnixClient(path string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	return &Client{base: "http://gateway", http: &http.Client{Transport: tr}}
}

// NewTCPClient talks to base (http://host:port) with a bearer token.
func NewTCPClient(base, token string) *Client {
	return &Client{base: strings.TrimSuffix(base, "/"), token: token, http: &http.Client{}}
}

// APIError is a non-2xx answer.
type APIError struct {
	Status int
	Body   Error
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Body.Error)
	if len(e.Body.Candidates) > 0 {
		b.WriteString("\ncandidates:")
		for _, c := range e.Body.Candidates {
			fmt.Fprintf(&b, "\n  %s", c)
		}
	}
	if len(e.Body.Suggestions) > 0 {
		b.WriteString("\ndid you mean:")
		for _, c := range e.Body.Suggestions {
			fmt.Fprintf(&b, "\n  %s", c)
		}
	}
	return b.String()
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("gateway not reachable (is `gateway serve` running with the same --state-dir?): %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		e := &APIError{Status: resp.StatusCode}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&e.Body); err != nil {
			e.Body.Error = resp.Status
		}
		return e
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Sessions lists reachable sessions.
func (c *Client) Sessions(ctx context.Context) ([]message.Session, error) {
	var ss []message.Session
	return ss, c.do(ctx, "GET", "/v1/sessions", nil, &ss)
}

// Send sends a message.
func (c *Client) Send(ctx context.Context, b SendBody) (router.Outbound, error) {
	var o router.Outbound
	return o, c.do(ctx, "POST", "/v1/messages", b, &o)
}

// Message reads where a message stands.
func (c *Client) Message(ctx context.Context, id string) (router.Outbound, error) {
	var o router.Outbound
	return o, c.do(ctx, "GET", "/v1/messages/"+url.PathEscape(id), nil, &o)
}

// Held lists held inbound messages.
func (c *Client) Held(ctx context.Context) ([]message.Held, error) {
	var hs []message.Held
	return hs, c.do(ctx, "GET", "/v1/held", nil, &hs)
}

// Decide releases or denies a held message.
func (c *Client) Decide(ctx context.Context, id string, release bool, reason string) error {
	a := "deny"
	if release {
		a = "release"
	}
	return c.do(ctx, "POST", "/v1/held/"+url.PathEscape(id), DecideBody{Action: a, Reason: reason}, nil)
}

// NotifyWhenIdle subscribes to a peer's idle notice, and with b.Wait
// waits for it.
func (c *Client) NotifyWhenIdle(ctx context.Context, b IdleBody) (IdleResult, error) {
	var out IdleResult
	return out, c.do(ctx, "POST", "/v1/idle", b, &out)
}

// Permissions lists the pending permission prompts, oldest first; all adds
// the recently answered and withdrawn ones.
func (c *Client) Permissions(ctx context.Context, all bool) ([]message.PermissionRequest, error) {
	path := "/v1/permissions"
	if all {
		path += "?all=true"
	}
	var ps []message.PermissionRequest
	return ps, c.do(ctx, "GET", path, nil, &ps)
}

// Permission reads one permission prompt, pending or recently settled.
func (c *Client) Permission(ctx context.Context, id string) (message.PermissionRequest, error) {
	var p message.PermissionRequest
	return p, c.do(ctx, "GET", "/v1/permissions/"+url.PathEscape(id), nil, &p)
}

// AnswerPermission answers a pending prompt and returns it settled.
func (c *Client) AnswerPermission(ctx context.Context, id string, a message.PermissionAnswer) (message.PermissionRequest, error) {
	var p message.PermissionRequest
	return p, c.do(ctx, "POST", "/v1/permissions/"+url.PathEscape(id), a, &p)
}

// Control sends the session at address a control request and returns its
// answer.
func (c *Client) Control(ctx context.Context, address string, ctl message.Control) (ControlReply, error) {
	var r ControlReply
	err := c.do(ctx, "POST", "/v1/control", ControlBody{Address: address, Kind: ctl.Kind, Mode: ctl.Mode, Model: ctl.Model}, &r)
	return r, err
}

// RemoteInfo is what the remote session at address told about itself.
func (c *Client) RemoteInfo(ctx context.Context, address string) (message.SessionInfo, error) {
	var info message.SessionInfo
	err := c.do(ctx, "GET", "/v1/remote/info?address="+url.QueryEscape(address), nil, &info)
	return info, err
}

// Resolve says which session address names.
func (c *Client) Resolve(ctx context.Context, address string) (message.Session, error) {
	var s message.Session
	return s, c.do(ctx, "GET", "/v1/resolve?address="+url.QueryEscape(address), nil, &s)
}

// ErrStreamEnded means the gateway closed the event stream.
var ErrStreamEnded = errors.New("event stream ended")

// EventGap is the Type of the Event Watch hands fn for the stream's gap
// notice: some events after lastID were forgotten before they could be
// replayed (the gateway keeps the latest only). Its ID is lastID; it
// carries nothing else, and the events that follow are the kept ones.
const EventGap message.EventType = "gap"

// maxWatchData caps one event of the stream Watch reads, its data lines
// together: the gateway writes each event on one line, at most this long.
const maxWatchData = 8 << 20

// Watch streams events after lastID (-1 for only new ones) to fn until ctx
// ends, fn returns an error, or the stream ends. A gap in the replay
// reaches fn as an EventGap first.
func (c *Client) Watch(ctx context.Context, lastID int64, fn func(message.Event) error) error {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/v1/events", nil)
	if err != nil {
		return err
	}
	if lastID >= 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(lastID, 10))
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("gateway not reachable: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &APIError{Status: resp.StatusCode, Body: Error{Error: resp.Status}}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxWatchData)
	var kind string
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				switch kind {
				case "error":
					var e struct{ Error string }
					_ = json.Unmarshal(data, &e)
					return errors.New(e.Error)
				case "gap":
					if err := fn(message.Event{Type: EventGap, ID: uint64(max(lastID, 0))}); err != nil {
						return err
					}
				default:
					var ev message.Event
					if err := json.Unmarshal(data, &ev); err != nil {
						return fmt.Errorf("bad event from gateway: %w", err)
					}
					if err := fn(ev); err != nil {
						return err
					}
				}
			}
			kind, data = "", data[:0]
		case bytes.HasPrefix(line, []byte("event: ")):
			kind = string(line[len("event: "):])
		case bytes.HasPrefix(line, []byte("data: ")):
			if len(data)+len(line)-len("data: ") > maxWatchData {
				return fmt.Errorf("bad event from gateway: more than %d bytes of data", maxWatchData)
			}
			data = append(data, line[len("data: "):]...)
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return ErrStreamEnded
}

// Readiness is GET /readyz's answer: ready overall, and each leg's state
// ("ready" or why not).
type Readiness struct {
	Ready bool              `json:"ready"`
	Legs  map[string]string `json:"legs"`
}

// Ready asks whether every leg is ready. A 503 is an answer, not an error.
func (c *Client) Ready(ctx context.Context) (Readiness, error) {
	var r Readiness
	status, body, err := c.Probe(ctx, "/readyz")
	if err != nil {
		return r, err
	}
	if status != http.StatusOK && status != http.StatusServiceUnavailable {
		return r, &APIError{Status: status, Body: Error{Error: http.StatusText(status)}}
	}
	err = json.Unmarshal(body, &r)
	return r, err
}

// maxProbeBody caps what Probe reads: health answers are a few hundred bytes.
const maxProbeBody = 64 << 10

// Probe GETs path and returns the status and the (capped) answer as they
// are, whatever the status: for health checks, which need no token and read
// a 503 as an answer.
func (c *Client) Probe(ctx context.Context, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("gateway not reachable (is `gateway serve` running with the same --state-dir?): %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxProbeBody))
	if err != nil {
		return 0, nil, fmt.Errorf("%s: reading the answer: %w", path, err)
	}
	return resp.StatusCode, b, nil
}

// Upgrade asks path to switch this connection to protocol proto (101
// Switching Protocols) and returns the raw stream.
func (c *Client) Upgrade(ctx context.Context, path, proto string) (io.ReadWriteCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", proto)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("gateway not reachable (is `gateway serve` running with the same --state-dir?): %w", err)
	}
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if resp.StatusCode != http.StatusSwitchingProtocols || !ok {
		defer resp.Body.Close()
		e := &APIError{Status: resp.StatusCode}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&e.Body); err != nil {
			e.Body.Error = resp.Status
		}
		return nil, e
	}
	return rwc, nil
}

// Pair opens a one-time pairing link for a browser (gateway pair).
func (c *Client) Pair(ctx context.Context, b PairBody) (Pairing, error) {
	var out Pairing
	return out, c.do(ctx, "POST", "/v1/pairings", b, &out)
}

// Away reads the away switch.
func (c *Client) Away(ctx context.Context) (AwayStatus, error) {
	var st AwayStatus
	return st, c.do(ctx, "GET", "/v1/away", nil, &st)
}

// SetAway switches away on or off.
func (c *Client) SetAway(ctx context.Context, on bool) (AwayStatus, error) {
	var st AwayStatus
	return st, c.do(ctx, "PUT", "/v1/away", AwayBody{Away: &on}, &st)
}
