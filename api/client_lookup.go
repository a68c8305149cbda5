package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sessiongateway/gateway/message"
)

// IsNotFound says whether err is the gateway answering 404: no such
// message, prompt or session.
func IsNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// RemoteSessions lists the remote (claude.ai) sessions only.
func (c *Client) RemoteSessions(ctx context.Context) ([]message.Session, error) {
	all, err := c.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	ss := []message.Session{}
	for _, s := range all {
		if s.Protocol == message.ProtocolRemote {
			ss = append(ss, s)
		}
	}
	return ss, nil
}

// RemoteAddress turns a bare remote session id, or a unique start of one
// (at least minIDStart characters), into its address; anything else, or a
// gateway that cannot be asked, leaves id for the gateway to resolve.
func (c *Client) RemoteAddress(ctx context.Context, id string) string {
	ss, err := c.Sessions(ctx)
	if err != nil {
		return id
	}
	var starts []string
	for _, s := range ss {
		if s.Protocol != message.ProtocolRemote || s.SessionID == "" {
			continue
		}
		if s.SessionID == id {
			return s.Address
		}
		if len(id) >= minIDStart && strings.HasPrefix(s.SessionID, id) {
			starts = append(starts, s.Address)
		}
	}
	if len(starts) == 1 {
		return starts[0]
	}
	return id
}

// minIDStart is the shortest start of a remote session id taken for it:
// shorter ones are names more often than ids.
const minIDStart = 8

// RemoteSessionID finds the remote session id behind id: a session id, a
// bridge:<id> address or any address that resolves to a remote session.
// Only a session the gateway follows will do: of any other, no output
// reaches it, so one unknown or not followed is an error at once.
func (c *Client) RemoteSessionID(ctx context.Context, id string) (string, error) {
	addr := c.RemoteAddress(ctx, id)
	sid, ok := strings.CutPrefix(addr, "bridge:")
	if !ok || sid == "" {
		s, err := c.Resolve(ctx, addr)
		if err != nil {
			return "", err
		}
		if s.Protocol != message.ProtocolRemote || s.SessionID == "" {
			return "", fmt.Errorf("%s is a %s session, not a remote one (see gateway remote sessions)", s.Address, s.Protocol)
		}
		sid = s.SessionID
	}
	info, err := c.RemoteInfo(ctx, "bridge:"+sid)
	switch {
	case IsNotFound(err):
		return "", fmt.Errorf("no remote session %s: the gateway neither lists nor follows it (see gateway remote sessions)", sid)
	case err != nil:
		return "", err
	case !info.Followed:
		return "", fmt.Errorf("remote session %s is not followed, so none of its output reaches the gateway (serve --remote-follow %s, or all)", sid, sid)
	}
	return sid, nil
}

// Health returns path's answer (/healthz or /readyz) as one line of JSON
// on 200; any other status is an error carrying the answer, so a 503 from
// /readyz says which leg is not ready.
func (c *Client) Health(ctx context.Context, path string) (string, error) {
	status, b, err := c.Probe(ctx, path)
	if err != nil {
		return "", err
	}
	text := compactJSON(b)
	if status != http.StatusOK {
		return "", fmt.Errorf("%s answered %d %s: %s", path, status, http.StatusText(status), text)
	}
	return text, nil
}

// compactJSON prints an answer on one line; what is not JSON is quoted.
func compactJSON(b []byte) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Sprintf("%q", strings.TrimSpace(string(b)))
	}
	out, _ := json.Marshal(v)
	return string(out)
}
