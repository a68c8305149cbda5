package notify

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/router"
)

// Flags are serve's notification flags; each also reads its GATEWAY_*
// variable through the configuration layer (--notify is GATEWAY_NOTIFY).
type Flags struct {
	targets    []string
	secretFile *string
	on         *string
	linkURL    *string
	secret     []byte
}

// RegisterFlags adds the notification flags to fs.
func RegisterFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{
		secretFile: fs.String("notify-secret-file", "", "file whose content signs --notify webhook bodies (X-Gateway-Signature: sha256=HMAC)"),
		on:         fs.String("notify-on", "", "also notify when a session goes idle or a remote turn ends: idle, turn or idle,turn (prompts and held messages always notify)"),
		linkURL:    fs.String("notify-link-url", "", "the gateway's API as a phone reaches it, for notification buttons (default: --api's address, or the first --allow-host)"),
	}
	fs.Var(targetsFlag{f}, "notify", "send a notification when a prompt or held message waits: a webhook `URL` (JSON POST), ntfy://HOST/TOPIC or ntfy:http(s)://HOST/TOPIC (repeatable)")
	return f
}

// targetsFlag is --notify. gateway config shows its targets as the logs
// do, scheme and host only: a topic or a webhook's path is the secret.
type targetsFlag struct{ f *Flags }

func (targetsFlag) String() string { return "" }

func (t targetsFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") { // GATEWAY_NOTIFY holds a comma-separated list
		if v = strings.TrimSpace(v); v != "" {
			t.f.targets = append(t.f.targets, v)
		}
	}
	return nil
}

// Redact shows a value (one target or a comma-separated list) as redact does.
func (targetsFlag) Redact(v string) string {
	parts := strings.Split(v, ",")
	for i, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			parts[i] = redact(target{url: p})
		}
	}
	return strings.Join(parts, ",")
}

// Check validates the flags and reads the secret file.
func (f *Flags) Check() error {
	if f == nil || len(f.targets) == 0 {
		return nil
	}
	if _, err := New(f.config(nil, nil)); err != nil {
		return err
	}
	if *f.secretFile == "" {
		return nil
	}
	// A secret like the token files: group or others may not read it.
	b, _, err := safefile.ReadSecret(*f.secretFile, 4096, nil)
	if err != nil {
		return fmt.Errorf("--notify-secret-file: %w", err)
	}
	if f.secret = []byte(strings.TrimSpace(string(b))); len(f.secret) == 0 {
		return errors.New("--notify-secret-file: the file is empty")
	}
	return nil
}

func (f *Flags) config(log *slog.Logger, d Decider) Config {
	var kinds []string
	for _, k := range strings.Split(*f.on, ",") {
		if k = strings.TrimSpace(k); k != "" {
			kinds = append(kinds, k)
		}
	}
	return Config{Targets: f.targets, Secret: f.secret, Kinds: kinds, BaseURL: *f.linkURL, Decider: d, Log: log}
}

// Running is a started notifier, or nothing without --notify: each method
// of a nil Running does nothing.
type Running struct {
	n      *Notifier
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start follows rt's events and notifies, until Stop; without --notify it
// returns nil. The flags were checked.
func (f *Flags) Start(ctx context.Context, log *slog.Logger, rt *router.Router) *Running {
	if f == nil || len(f.targets) == 0 {
		return nil
	}
	n, err := New(f.config(log, rt))
	if err != nil { // checked at parse time
		log.Error("notifications off", "err", err)
		return nil
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &Running{n: n, cancel: cancel}
	r.wg.Go(func() { n.Run(ctx, rt.Hub()) })
	return r
}

// Actions is the handler of the action links, nil without notifications.
func (r *Running) Actions() http.Handler {
	if r == nil {
		return nil
	}
	return r.n.ActionHandler()
}

// LinkBase sets where action links point when --notify-link-url is not
// given: base() is read for each notification.
func (r *Running) LinkBase(base func() string) {
	if r != nil && r.n.cfg.BaseURL == "" {
		r.n.base.Store(&base)
	}
}

// Counts are the notifier's counters (Notifier.Counts); nil without
// notifications.
func (r *Running) Counts() map[string]uint64 {
	if r == nil {
		return nil
	}
	return r.n.Counts()
}

// Stop ends the notifier and waits for it.
func (r *Running) Stop() {
	if r != nil {
		r.cancel()
		r.wg.Wait()
	}
}

// Targets are the --notify values given.
func (f *Flags) Targets() []string {
	if f == nil {
		return nil
	}
	return f.targets
}
