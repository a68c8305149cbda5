package main

import (
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/leg/remote"
	"github.com/sessiongateway/gateway/leg/remote/sessionsapi"
	"github.com/sessiongateway/gateway/leg/remote/stream"
)

// newRemoteLeg builds the remote leg from checked options.
func newRemoteLeg(log *slog.Logger, o *remoteOpts) (*remote.Leg, error) {
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
	signer, err := auth.ParseSigner(o.signer)
	if err != nil {
		return nil, err
	}
	opts.Signer = signer
	c, err := sessionsapi.New(opts)
	if err != nil {
		return nil, err
	}
	transport := stream.Transport(o.transport)
	return remote.NewLeg(remote.LegConfig{
		API: remote.NewSessionsAPI(c, transport), BaseURL: o.url, OrgUUID: o.org,
		Transport: transport, Follow: o.follow, Logger: log.With("leg", "remote"),
		ListInterval: o.listInterval, Aliases: o.aliases, Reply: remote.ReplyMode(o.reply),
		Tune: func(c *stream.Config) {
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
