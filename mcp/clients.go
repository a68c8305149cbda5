package mcp

import (
	"context"

	"github.com/sessiongateway/gateway/message"
)

// Leg is what the server needs of the mcp leg (leg/mcp), the one that
// cmd/gateway gives the router too: a client joins its roster once
// initialized, as a session with an inbox, and leaves when its MCP session
// ends; in between it sends, reads its inbox and asks after what it sent.
type Leg interface {
	// Join adds a client under name (made unique) and returns its session;
	// push is told of each message put in its inbox.
	Join(name, kind string, push func(message.Message)) (message.Session, error)
	// Leave takes the client of me out of the roster; a second time does
	// nothing.
	Leave(me message.Session)
	// Submit sends body from me to target and returns the message's id.
	Submit(ctx context.Context, me, target message.Session, body string) (string, error)
	// Sent is where a message a client sent stands (with final, once its
	// status is final or ctx ends); an error for an id it does not keep.
	Sent(ctx context.Context, id string, final bool) (to string, t message.Tracker, err error)
	// Read hands each of up to limit messages after cursor in the inbox of
	// me to each, waiting until there is one or ctx ends, and returns the
	// cursor to pass next time; an error once me has left.
	Read(ctx context.Context, me message.Session, cursor uint64, limit int, each func(seq uint64, m message.Message)) (uint64, error)
	// Unread counts the messages me has not read yet.
	Unread(me message.Session) int
	// Prompt makes req, a permission request the channel of me relayed,
	// a pending prompt of me (source channel); reply carries its answer.
	Prompt(ctx context.Context, me message.Session, req message.PermissionRequest, reply func(ctx context.Context, requestID string, b message.Behavior) error) error
}
