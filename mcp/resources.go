package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/message/eventfmt"
	"github.com/sessiongateway/gateway/router"
)

// Resource addresses.
const (
	SessionsURI = "gateway://sessions"
	InboxURI    = "gateway://inbox"
	// TranscriptTemplate is each remote session's transcript; SESSION is
	// its name or address, escaped as a URI path segment.
	TranscriptTemplate = "gateway://remote/{session}/transcript"
	transcriptPrefix   = "gateway://remote/"
	transcriptSuffix   = "/transcript"
)

// RosterPoll is how often a client subscribed to the session list has the
// roster compared with what it last saw.
const RosterPoll = 2 * time.Second

func (cn *conn) addResources() {
	cn.srv.AddResource(&sdk.Resource{URI: SessionsURI, Name: "sessions", MIMEType: "application/json",
		Description: "Every session reachable through the gateway (as list_sessions); subscribe for updates when it changes."}, cn.readSessions)
	cn.srv.AddResource(&sdk.Resource{URI: InboxURI, Name: "inbox", MIMEType: "application/json",
		Description: "Messages waiting for you, unread (peeked, not consumed: read them with wait_for_messages); subscribe for an update when one arrives."}, cn.readInbox)
	cn.srv.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: TranscriptTemplate, Name: "remote-transcript", MIMEType: "text/plain",
		Description: "A claude.ai remote session's recent output as a transcript; subscribe for an update when it changes."}, cn.readTranscript)
}

func jsonContents(uri string, v any) (*sdk.ReadResourceResult, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

func (cn *conn) readSessions(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	if err := cn.need(api.ScopeRead); err != nil {
		return nil, err
	}
	return jsonContents(req.Params.URI, cn.s.cfg.Router.Sessions(ctx))
}

func (cn *conn) readInbox(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	if err := cn.need(api.ScopeRead); err != nil {
		return nil, err
	}
	me, err := cn.me()
	if err != nil {
		return nil, err
	}
	return jsonContents(req.Params.URI, map[string]any{"you": me.Name, "unread": cn.s.cfg.Leg.Unread(me)})
}

// transcriptSession is the session named in a transcript URI.
func transcriptSession(uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, transcriptPrefix)
	if !ok {
		return "", false
	}
	seg, ok := strings.CutSuffix(rest, transcriptSuffix)
	if !ok || seg == "" {
		return "", false
	}
	s, err := url.PathUnescape(seg)
	return s, err == nil && s != ""
}

func (cn *conn) readTranscript(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	if err := cn.need(api.ScopeRead); err != nil {
		return nil, err
	}
	name, ok := transcriptSession(req.Params.URI)
	if !ok {
		return nil, sdk.ResourceNotFoundError(req.Params.URI)
	}
	s, err := cn.remote(ctx, name)
	if err != nil {
		return nil, err
	}
	text, _ := transcript(cn.s.cfg.Router.Hub(), s.SessionID, 0)
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
}

// remote resolves name to a remote session.
func (cn *conn) remote(ctx context.Context, name string) (message.Session, error) {
	_, s, err := cn.s.cfg.Router.Resolve(ctx, name)
	if err != nil {
		return s, fmt.Errorf("%v (call list_sessions with protocol remote)", err)
	}
	if s.Protocol != message.ProtocolRemote {
		return s, fmt.Errorf("%s is a %s session: only remote (claude.ai) sessions have a transcript here", s.Name, s.Protocol)
	}
	return s, nil
}

// transcript renders the kept events about session sid after cursor, and
// the cursor to pass next time.
func transcript(h *router.Hub, sid string, cursor int64) (string, int64) {
	replay, _, sub := h.Subscribe(max(cursor, 0))
	sub.Close()
	var b bytes.Buffer
	t := eventfmt.NewTranscript(&b, eventfmt.Prompt)
	next := cursor
	for _, ev := range replay {
		next = int64(ev.ID)
		if eventfmt.AboutSession(ev, sid) {
			t.Event(ev)
		}
	}
	t.EndLine()
	return b.String(), next
}

// subscribe starts, once per connection, the watcher that sends
// resources/updated for what the client subscribed to.
func (cn *conn) subscribe(uri string) error {
	if err := cn.need(api.ScopeRead); err != nil {
		return err
	}
	var sid string
	switch {
	case uri == SessionsURI, uri == InboxURI:
	default:
		name, ok := transcriptSession(uri)
		if !ok {
			return sdk.ResourceNotFoundError(uri)
		}
		s, err := cn.remote(context.Background(), name)
		if err != nil {
			return err
		}
		sid = s.SessionID
	}
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.watch == nil {
		cn.watch = &watch{transcripts: map[string]string{}}
	}
	if sid != "" {
		cn.watch.transcripts[sid] = uri
	}
	if cn.watch.started || cn.done == nil {
		return nil
	}
	cn.watch.started = true
	cn.s.wg.Add(1)
	go func() {
		defer cn.s.wg.Done()
		cn.watchLoop()
	}()
	return nil
}

// watch is what a connection's watcher follows.
type watch struct {
	started     bool
	transcripts map[string]string // remote session id -> the URI subscribed
}

func (cn *conn) watchLoop() {
	r := cn.s.cfg.Router
	_, _, sub := r.Hub().Subscribe(-1)
	defer func() { sub.Close() }()
	t := time.NewTicker(RosterPoll)
	defer t.Stop()
	last := rosterKey(r.Sessions(context.Background()))
	updated := func(uri string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = cn.srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri})
	}
	for {
		select {
		case <-cn.done:
			return
		case <-t.C:
			if k := rosterKey(r.Sessions(context.Background())); k != last {
				last = k
				updated(SessionsURI)
			}
		case ev, ok := <-sub.C:
			if !ok { // too slow for the hub: follow again from now
				_, _, sub = r.Hub().Subscribe(-1)
				continue
			}
			cn.mu.Lock()
			var uri string
			for sid, u := range cn.watch.transcripts {
				if eventfmt.AboutSession(ev, sid) {
					uri = u
				}
			}
			cn.mu.Unlock()
			if uri != "" {
				updated(uri)
			}
		}
	}
}

// rosterKey is what a change of the roster changes.
func rosterKey(ss []message.Session) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "%s|%s|%s|%v|%v\n", s.Protocol, s.Address, s.Name, s.Reachable, s.Stale)
	}
	return b.String()
}
