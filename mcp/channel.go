package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/internal/jsonx"
	"github.com/sessiongateway/gateway/message"
)

// Claude Code's channels (research preview; docs/protocols/claude-channels.md):
// a stdio client is told the server is a channel with a permission relay,
// so a Claude Code session that loads it with --channels relays its
// permission prompts here and takes the answers back; `gateway mcp
// --channel` also pushes what others send it into the session. The SDK
// knows none of these notifications (it refuses an unknown method before
// any middleware), so they are taken off and put on the connection itself.

// The channel's notifications, as Claude Code 2.1.332 spells them.
const (
	MethodChannel           = "notifications/claude/channel"
	MethodPermission        = "notifications/claude/channel/permission"
	MethodPermissionRequest = "notifications/claude/channel/permission_request"
)

// Capabilities of a channel, under "experimental".
const (
	CapChannel           = "claude/channel"
	CapChannelPermission = "claude/channel/permission"
)

// Bounds of a relayed permission request's fields.
const (
	maxChannelRequestID   = 64
	maxChannelToolName    = 256
	maxChannelDescription = 2 << 10
	maxChannelPreview     = 8 << 10
)

// DropChannelPrompt counts a relayed permission request that is not a
// pending prompt: malformed, before initialize, or over a cap.
const DropChannelPrompt = "channel-prompt"

// channelCaps are the capabilities a stdio client is told; logging stays
// (messages are pushed as log notifications), the rest is inferred.
func channelCaps() *sdk.ServerCapabilities {
	//lint:ignore SA1019 the versions served (sessionVersions) all have logging; it is how a message is pushed
	return &sdk.ServerCapabilities{Logging: &sdk.LoggingCapabilities{},
		Experimental: map[string]any{CapChannel: map[string]any{}, CapChannelPermission: map[string]any{}}}
}

// channelTransport hands the channel's notifications from the client to
// cn and lets cn write its own on the same connection.
type channelTransport struct {
	sdk.Transport
	cn *conn
}

func (t channelTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	cc := &channelConn{Connection: c, cn: t.cn}
	t.cn.mu.Lock()
	t.cn.wire = c
	t.cn.mu.Unlock()
	return cc, nil
}

type channelConn struct {
	sdk.Connection
	cn *conn
}

// Read passes on everything but the channel's notifications.
func (c *channelConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.Connection.Read(ctx)
		if err != nil {
			return m, err
		}
		r, ok := m.(*jsonrpc.Request)
		if !ok || r.IsCall() || !strings.HasPrefix(r.Method, MethodChannel+"/") {
			return m, nil
		}
		if r.Method == MethodPermissionRequest {
			c.cn.permissionRequest(ctx, r.Params)
		} // others are the server's to send: dropped
	}
}

// relayed is a permission request as the channel relays it.
type relayed struct {
	RequestID    string `json:"request_id"`
	ToolName     string `json:"tool_name"`
	Description  string `json:"description"`
	InputPreview string `json:"input_preview"`
}

// permissionRequest makes a relayed request a pending prompt of the
// client; what is refused is counted and logged, and the session's own
// dialog still asks.
func (cn *conn) permissionRequest(ctx context.Context, params json.RawMessage) {
	s := cn.s
	refuse := func(why string, args ...any) {
		s.cfg.Drop(DropChannelPrompt)
		s.log.Info("channel permission request refused: "+why, args...)
	}
	me, err := cn.me()
	if err != nil {
		refuse("not initialized")
		return
	}
	var in relayed
	if err := json.Unmarshal(params, &in); err != nil {
		refuse("not a permission request", "name", me.Name)
		return
	}
	if in.RequestID == "" || len(in.RequestID) > maxChannelRequestID || in.ToolName == "" || len(in.ToolName) > maxChannelToolName {
		refuse("no usable request_id or tool_name", "name", me.Name)
		return
	}
	req := message.PermissionRequest{RequestID: in.RequestID, ToolName: in.ToolName,
		Description: bounded.Clip(in.Description, maxChannelDescription), Input: previewInput(in.InputPreview)}
	ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.cfg.Leg.Prompt(ectx, me, req, cn.replyPermission); err != nil {
		refuse(err.Error(), "name", me.Name, "request_id", in.RequestID)
		return
	}
	s.log.Info("channel prompt raised", "name", me.Name, "tool", in.ToolName, "request_id", in.RequestID)
}

// previewInput is the prompt's input: the preview itself when it is a
// whole JSON object, else the preview as a string (it is cut short for
// long inputs, so often no JSON at all).
func previewInput(p string) json.RawMessage {
	p = bounded.Clip(p, maxChannelPreview)
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(p), &obj) == nil && obj != nil {
		var b bytes.Buffer
		_ = json.Compact(&b, []byte(p)) // the CLI indents it
		return b.Bytes()
	}
	b, _ := jsonx.Marshal(map[string]string{"input_preview": p})
	return b
}

// replyPermission sends the answer to request id.
func (cn *conn) replyPermission(ctx context.Context, id string, b message.Behavior) error {
	return cn.notifyWire(ctx, MethodPermission, map[string]string{"request_id": id, "behavior": string(b)})
}

// notifyWire writes a notification of the channel's on the connection.
func (cn *conn) notifyWire(ctx context.Context, method string, params any) error {
	cn.mu.Lock()
	w := cn.wire
	cn.mu.Unlock()
	if w == nil {
		return ErrNoChannel
	}
	raw, err := jsonx.Marshal(params)
	if err != nil {
		return err
	}
	return w.Write(ctx, &jsonrpc.Request{Method: method, Params: raw})
}

// pushChannel hands what waits in the inbox of me into the session as
// channel messages: each is delivered once written.
func (cn *conn) pushChannel(me message.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for cn.s.cfg.Leg.Unread(me) > 0 && ctx.Err() == nil {
		var failed error
		_, err := cn.s.cfg.Leg.Read(ctx, me, 0, 16, func(_ uint64, m message.Message) {
			if failed != nil {
				return
			}
			failed = cn.notifyWire(ctx, MethodChannel, channelMessage(m))
		})
		if err != nil || failed != nil {
			return // the session has ended, or is ending with the failed write
		}
	}
}

// channelMessage is m as the session reads it: meta keys are identifiers
// (the CLI keeps no others).
func channelMessage(m message.Message) map[string]any {
	meta := map[string]string{"message_id": m.ID, "from": m.FromName, "from_address": m.From}
	for k, v := range meta {
		if v == "" {
			delete(meta, k)
		}
	}
	return map[string]any{"content": m.Body, "meta": meta}
}

// ErrNoChannel is an answer to a client with no connection of its own to
// carry it (an HTTP client never relays prompts).
var ErrNoChannel = errors.New("mcp: this client has no channel connection")
