package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/internal/settings"
	"github.com/sessiongateway/gateway/leg/remote"
	"github.com/sessiongateway/gateway/leg/remote/stream"
)

// Default service URLs: the Sessions API for OAuth bearer credentials, the
// web app for a sessionKey cookie (docs/protocols/claude-ai-remote.md#request-headers).
const (
	defaultRemoteURL    = "https://api.anthropic.com"
	defaultRemoteWebURL = "https://claude.ai"
)

// remoteOpts are serve's --remote-* flags; the configuration layer
// (internal/settings, through config.go) fills each from its
// GATEWAY_REMOTE_* variable or the config file when the command line
// leaves it alone.
type remoteOpts struct {
	url            string
	org            string
	tokenFile      string
	sessionKeyFile string
	claudeCreds    string
	tokenURL       string
	follow         multi
	transport      string
	signer         string
	idle           time.Duration
	aliases        map[string]string    // --remote-alias ID=NAME
	reply          string               // --remote-reply result|assistant
	tune           func(*stream.Config) // tests: faster backoff
	listInterval   time.Duration        // tests: faster list refresh
}

func remoteFlags(fs *flag.FlagSet, e *env) *remoteOpts {
	o := &remoteOpts{}
	str := func(p *string, name, usage string) {
		v := "GATEWAY_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		fs.StringVar(p, name, "", usage+" (env "+v+")")
	}
	str(&o.url, "remote-url", "claude.ai service base URL (default "+defaultRemoteURL+", or "+defaultRemoteWebURL+" with a session key)")
	str(&o.org, "remote-org", "organisation UUID of the remote sessions")
	str(&o.tokenFile, "remote-token-file", "file holding the OAuth bearer token (raw or JSON; re-read when it changes)")
	str(&o.sessionKeyFile, "remote-session-key-file", "file holding the claude.ai web sessionKey cookie")
	str(&o.claudeCreds, "remote-claude-credentials", "opt in to reuse a Claude Code login: its .credentials.json, or \"default\" for ~/.claude/.credentials.json")
	str(&o.tokenURL, "remote-token-url", "OAuth token URL for refreshing reused Claude Code credentials")
	str(&o.transport, "remote-transport", "live transport: ws (subscribe WebSocket) or sse (v2 event stream)")
	str(&o.signer, "remote-signer", "event signer: none, ed25519-file:PATH or exec:COMMAND")
	fs.DurationVar(&o.idle, "remote-idle", 0, "close a followed session's live connection after this long without a message and poll it once a minute until it speaks (claude.ai's web client: 5m); 0 keeps it open (env GATEWAY_REMOTE_IDLE)")
	str(&o.reply, "remote-reply", "what of a remote session's answer goes back to a local sender: result (its turn's final text) or assistant (each finished assistant message)")
	o.aliases = map[string]string{}
	addAlias := func(v string) error {
		id, name, ok := strings.Cut(v, "=")
		if !ok || id == "" || name == "" {
			return fmt.Errorf("%q: want SESSION_ID=NAME", v)
		}
		o.aliases[strings.TrimSpace(id)] = strings.TrimSpace(name)
		return nil
	}
	fs.Func("remote-alias", "fix a remote session's alias name on the local legs: `ID=NAME` (repeatable; env GATEWAY_REMOTE_ALIAS, comma-separated); the default is derived from its title", addAlias)
	fs.Var(&o.follow, "remote-follow", "remote session id to keep live (repeatable), or all (env GATEWAY_REMOTE_FOLLOW, comma-separated)")
	return o
}

// remoteTuning are the remote flags that only shape the remote leg; the
// credentials turn it on. Without them these change nothing, so serve
// warns of those set (check refuses --remote-org and --remote-follow).
var remoteTuning = []string{"remote-url", "remote-org", "remote-token-url", "remote-transport",
	"remote-signer", "remote-idle", "remote-reply", "remote-alias", "remote-follow"}

// unused warns of the tuning flags set on any layer while the remote leg
// is off: one warning naming them all, or none.
func (o *remoteOpts) unused(st *settings.Settings, legs string) []string {
	if o.enabled() {
		return nil
	}
	var set []string
	for _, k := range remoteTuning {
		if src, _ := st.Source(k); src != settings.Default {
			set = append(set, "--"+k)
		}
	}
	if len(set) == 0 {
		return nil
	}
	verb := "has"
	if len(set) > 1 {
		verb = "have"
	}
	return []string{st.Annotate(fmt.Sprintf("%s %s no effect: the remote leg is off (--legs %s)", strings.Join(set, ", "), verb, legs))}
}

// enabled says whether any remote credentials were given.
func (o *remoteOpts) enabled() bool {
	return o.tokenFile != "" || o.sessionKeyFile != "" || o.claudeCreds != ""
}

// check validates the flags and fills the defaults.
func (o *remoteOpts) check() error {
	switch o.reply {
	case "":
		o.reply = "result"
	case "result", "assistant":
	default:
		return fmt.Errorf("--remote-reply %q: want result or assistant", o.reply)
	}
	for id := range o.aliases {
		if !remote.ValidSessionID(id) {
			return fmt.Errorf("--remote-alias %s: %q is not a session id", id, id)
		}
	}
	if o.idle < 0 {
		return fmt.Errorf("--remote-idle %s: want 0 (never) or a positive duration", o.idle)
	}
	n := 0
	for _, s := range []string{o.tokenFile, o.sessionKeyFile, o.claudeCreds} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		return errors.New("--remote-token-file, --remote-session-key-file and --remote-claude-credentials exclude each other")
	}
	// The defaults are filled without credentials too: `gateway config`
	// shows what a remote leg would use.
	if o.url == "" {
		o.url = defaultRemoteURL
		if o.sessionKeyFile != "" {
			o.url = defaultRemoteWebURL
		}
	}
	o.transport = cmp.Or(o.transport, "ws")
	o.signer = cmp.Or(o.signer, "none")
	if n == 0 {
		if len(o.follow) > 0 || o.org != "" {
			return errors.New("--remote-follow and --remote-org need credentials: --remote-token-file, --remote-session-key-file or --remote-claude-credentials")
		}
		return nil
	}
	u, err := url.Parse(o.url)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return fmt.Errorf("--remote-url %q: want http(s)://host[:port]", o.url)
	}
	o.url = strings.TrimSuffix(o.url, "/")
	switch o.transport {
	case "ws", "sse":
	default:
		return fmt.Errorf("--remote-transport %q: want ws or sse", o.transport)
	}
	for _, id := range o.follow {
		if id == "all" {
			continue
		}
		if !remote.ValidSessionID(id) {
			return fmt.Errorf("--remote-follow %q: not a session id (or all)", id)
		}
	}
	// Built now, as the leg will, so a bad key or a missing command is a
	// usage error at the start (exit 2), not a failure of the first post.
	if _, err := auth.ParseSigner(o.signer); err != nil {
		return err
	}
	return nil
}
