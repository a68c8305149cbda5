package sessionsapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// EventPage is one page of a session's events, oldest first.
type EventPage struct {
	Data    []json.RawMessage `json:"data"`
	HasMore bool              `json:"has_more"`
	FirstID string            `json:"first_id"`
	LastID  string            `json:"last_id"`
}

// CodeEventPage is one page of a v2 code session's events: the same shape,
// with v2 envelopes ({"event_id","event_type","sequence_num","source",
// "created_at","payload"}) in Data.
type CodeEventPage = EventPage

// ListEvents returns the events after afterID (exclusive; "" = from the
// start), at most limit of them (0 = the server's default), from GET
// /v1/sessions/{id}/events.
func (c *Client) ListEvents(ctx context.Context, id, afterID string, limit int) (EventPage, error) {
	const op = "ListEvents"
	p, err := pathID(op, id)
	if err != nil {
		return EventPage{}, err
	}
	q := url.Values{}
	if afterID != "" {
		q.Set("after_id", afterID)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var page EventPage
	err = c.call(ctx, request{op: op, method: http.MethodGet, path: "/v1/sessions/" + p + "/events",
		route: "/v1/sessions/{id}/events", query: q, retry: retryTransient}, &page)
	return page, err
}

// ListCodeEvents returns the v2 envelopes with sequence_num > afterSeq
// ("the last number I have"), at most limit (0 = the server's default), from
// GET /v1/code/sessions/{id}/events?from_sequence_num=afterSeq.
func (c *Client) ListCodeEvents(ctx context.Context, id string, afterSeq uint64, limit int) (CodeEventPage, error) {
	const op = "ListCodeEvents"
	p, err := pathID(op, id)
	if err != nil {
		return CodeEventPage{}, err
	}
	q := url.Values{"from_sequence_num": {strconv.FormatUint(afterSeq, 10)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var page CodeEventPage
	err = c.call(ctx, request{op: op, method: http.MethodGet, path: "/v1/code/sessions/" + p + "/events",
		route: "/v1/code/sessions/{id}/events", query: q, retry: retryTransient}, &page)
	return page, err
}

// EventsAfter is ListEvents with the server's page size, in the shape the
// live stream's gap recovery wants.
func (c *Client) EventsAfter(ctx context.Context, sessionID, afterID string) ([]json.RawMessage, bool, error) {
	p, err := c.ListEvents(ctx, sessionID, afterID, 0)
	return p.Data, p.HasMore, err
}

// CodeEventsAfter is ListCodeEvents with the server's page size, in the
// shape the live stream's gap recovery wants.
func (c *Client) CodeEventsAfter(ctx context.Context, sessionID string, after uint64) ([]json.RawMessage, bool, error) {
	p, err := c.ListCodeEvents(ctx, sessionID, after, 0)
	return p.Data, p.HasMore, err
}

// PostEvents posts events to POST /v1/sessions/{id}/events and returns them
// as the server stored them. Each event must be a JSON object. Before the
// first attempt, every event without a "uuid" gets one and is canonicalised
// and signed (see AttestationField); an event that cannot be is an
// *EventError and nothing is sent. Because every event then has a stable
// uuid the server de-duplicates by, the post is retried like a GET.
func (c *Client) PostEvents(ctx context.Context, id string, events ...json.RawMessage) ([]json.RawMessage, error) {
	return c.postEvents(ctx, "PostEvents", "/v1/sessions/", id, events)
}

// PostCodeEvents is PostEvents for a v2 code session (POST
// /v1/code/sessions/{id}/events).
func (c *Client) PostCodeEvents(ctx context.Context, id string, events ...json.RawMessage) ([]json.RawMessage, error) {
	return c.postEvents(ctx, "PostCodeEvents", "/v1/code/sessions/", id, events)
}

func (c *Client) postEvents(ctx context.Context, op, prefix, id string, events []json.RawMessage) ([]json.RawMessage, error) {
	p, err := pathID(op, id)
	if err != nil {
		return nil, err
	}
	if len(events) == 0 {
		return nil, fmt.Errorf("sessionsapi: %s: %w: no events", op, ErrInvalidEvent)
	}
	prepared, err := c.prepare(ctx, op, events)
	if err != nil {
		return nil, err
	}
	var body bytes.Buffer
	body.WriteString(`{"events":[`)
	for i, e := range prepared {
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(e)
	}
	body.WriteString("]}")
	var out struct {
		Data []json.RawMessage `json:"data"`
	}
	err = c.call(ctx, request{op: op, method: http.MethodPost, path: prefix + p + "/events", route: prefix + "{id}/events",
		body: body.Bytes(), retry: retryTransient}, &out)
	return out.Data, err
}

// PingCodeSession tells the service the client is still there (POST
// /v1/code/sessions/{id}/ping). A ping changes nothing, so it is retried.
func (c *Client) PingCodeSession(ctx context.Context, id string) error {
	const op = "PingCodeSession"
	p, err := pathID(op, id)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, request{op: op, method: http.MethodPost, path: "/v1/code/sessions/" + p + "/ping",
		route: "/v1/code/sessions/{id}/ping", retry: retryTransient})
	return err
}
