package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/transport/remotews"
	"github.com/sessiongateway/gateway/transport/sessionsapi"
)

// remoteAPI adapts the Sessions API client to what the remote leg needs,
// on the v1 paths (/v1/sessions, with the subscribe WebSocket) or the v2
// ones (/v1/code/sessions, with the SSE stream).
type remoteAPI struct {
	c  *sessionsapi.Client
	v2 bool
}

func (a remoteAPI) EventsAfter(ctx context.Context, id, after string) ([]json.RawMessage, bool, error) {
	return a.c.EventsAfter(ctx, id, after)
}

func (a remoteAPI) CodeEventsAfter(ctx context.Context, id string, after uint64) ([]json.RawMessage, bool, error) {
	return a.c.CodeEventsAfter(ctx, id, after)
}

func (a remoteAPI) StreamHeader(ctx context.Context) (http.Header, error) {
	return a.c.StreamHeader(ctx)
}

func (a remoteAPI) ListSessions(ctx context.Context) ([]remotews.RemoteSession, error) {
	list := a.c.ListSessions
	if a.v2 {
		list = a.c.ListCodeSessions
	}
	ss, err := list(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]remotews.RemoteSession, len(ss))
	for i, s := range ss {
		out[i] = remotews.RemoteSession{ID: s.ID, Title: s.Title, Status: s.Status, Created: s.CreatedAt}
	}
	return out, nil
}

func (a remoteAPI) Post(ctx context.Context, id string, events ...json.RawMessage) error {
	post := a.c.PostEvents
	if a.v2 {
		post = a.c.PostCodeEvents
	}
	_, err := post(ctx, id, events...)
	return err
}

// newRemoteLeg builds the remote leg from checked options.
func newRemoteLeg(log *slog.Logger, o *remoteOpts) (*remotews.Leg, error) {
	// Outgoing REST requests carry the W3C traceparent of the span they
	// belong to.
	otel.SetTextMapPropagator(propagation.TraceContext{})
	opts := sessionsapi.Options{BaseURL: o.url, OrgUUID: o.org, ClientPlatform: "gateway", Version: version, Logger: log}
	switch {
	case o.tokenFile != "":
		opts.Token = auth.TokenFile(o.tokenFile)
	case o.claudeCreds != "":
		path := o.claudeCreds
		if path == "default" {
			p, err := auth.DefaultClaudeCodeCredentialsPath()
			if err != nil {
				return nil, err
			}
			path = p
		}
		tokenURL := o.tokenURL
		if tokenURL == "" {
			tokenURL = auth.ClaudeCodeTokenURL
		}
		ts, err := auth.ClaudeCodeCredentials(path, tokenURL)
		if err != nil {
			return nil, fmt.Errorf("--remote-claude-credentials: %w", err)
		}
		opts.Token = ts
	case o.sessionKeyFile != "":
		// The cookie file gets the token file's checks (0600, no symlink,
		// capped); it is read once.
		tok, err := auth.TokenFile(o.sessionKeyFile).Token()
		if err != nil {
			return nil, fmt.Errorf("--remote-session-key-file: %w", err)
		}
		opts.SessionKey = tok.AccessToken
	}
	if opts.Token != nil {
		// Fail at start on an unreadable or malformed credential rather than
		// on the first request.
		// The sources cache on their own terms: a token file is re-read
		// when it changes, so no ReuseTokenSource around them.
		if _, err := opts.Token.Token(); err != nil {
			return nil, fmt.Errorf("remote credentials: %w", err)
		}
	}
	signer, err := newSigner(o.signer)
	if err != nil {
		return nil, err
	}
	opts.Signer = signer
	c, err := sessionsapi.New(opts)
	if err != nil {
		return nil, err
	}
	return remotews.NewLeg(remotews.LegConfig{
		API: remoteAPI{c: c, v2: o.transport == "sse"}, BaseURL: o.url, OrgUUID: o.org,
		Transport: remotews.Transport(o.transport), Follow: o.follow, Logger: log.With("leg", "remote"),
		ListInterval: o.listInterval, Aliases: o.aliases, Reply: remotews.ReplyMode(o.reply),
		Tune: func(c *remotews.Config) {
			c.IdleTimeout = o.idle
			if o.idle == 0 {
				c.IdleTimeout = -1 // the gateway keeps followed sessions live
			}
			if o.tune != nil {
				o.tune(c)
			}
		},
	})
}

func newSigner(spec string) (auth.Signer, error) {
	switch {
	case spec == "none":
		return auth.NewNoneSigner(), nil
	case strings.HasPrefix(spec, "ed25519-file:"):
		s, err := auth.NewEd25519FileSigner(strings.TrimPrefix(spec, "ed25519-file:"))
		if err != nil {
			return nil, fmt.Errorf("--remote-signer: %w", err)
		}
		return s, nil
	case strings.HasPrefix(spec, "exec:"):
		argv := strings.Fields(strings.TrimPrefix(spec, "exec:"))
		if len(argv) == 0 {
			return nil, fmt.Errorf("--remote-signer exec: names no command")
		}
		return auth.NewExecSigner(argv, 10*time.Second), nil
	}
	return nil, fmt.Errorf("--remote-signer %q: want none, ed25519-file:PATH or exec:COMMAND", spec)
}
