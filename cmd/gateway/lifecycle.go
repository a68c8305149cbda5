package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sessiongateway/gateway/internal/lifecycle"
)

// defaultGrace is how long a stopping gateway may take: long enough for a
// remote POST in flight, short of the usual 30 s before a service manager
// or container runtime sends SIGKILL.
const defaultGrace = 10 * time.Second

// lifecycleOpts are serve's --grace flag and what SIGHUP reloads.
type lifecycleOpts struct {
	grace time.Duration
	// level re-reads the wanted log level on SIGHUP; a kept reason leaves
	// the level as it is and says why (what pins it, or that nothing sets
	// it). The default reads GATEWAY_LOG_LEVEL; the config layer may
	// replace it with one that re-reads the config file.
	level func() (lvl slog.Level, kept string, err error)
}

func lifecycleFlags(fs *flag.FlagSet, e *env) *lifecycleOpts {
	o := &lifecycleOpts{grace: defaultGrace}
	fs.Var((*graceValue)(&o.grace), "grace", "on SIGTERM or SIGINT: how long to drain API requests, flush the outbox and deregister before exiting (env GATEWAY_GRACE)")
	o.level = func() (slog.Level, string, error) {
		v := strings.TrimSpace(e.getenv("GATEWAY_LOG_LEVEL"))
		if v == "" {
			return 0, "GATEWAY_LOG_LEVEL is not set", nil
		}
		var l slog.Level
		if err := l.UnmarshalText([]byte(v)); err != nil {
			return 0, "", fmt.Errorf("GATEWAY_LOG_LEVEL %q: want debug, info, warn or error", v)
		}
		return l, "", nil
	}
	return o
}

// graceValue is a duration flag that refuses a grace period that would
// cut every shutdown short.
type graceValue time.Duration

func (g *graceValue) String() string { return time.Duration(*g).String() }

// Get makes it a flag.Getter of a time.Duration, which the configuration
// layer reads as a duration key.
func (g *graceValue) Get() any     { return time.Duration(*g) }
func (g *graceValue) Type() string { return "duration" }

func (g *graceValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("want a positive duration such as 10s")
	}
	*g = graceValue(d)
	return nil
}

// levelReloader moves lv to what o.level reads, or says why it stays.
func (o *lifecycleOpts) levelReloader(lv *slog.LevelVar) lifecycle.Reloader {
	return lifecycle.Reloader{What: "log level", Reload: func() (string, string, error) {
		if o.level == nil {
			return "unchanged", "", nil
		}
		l, kept, err := o.level()
		if err != nil || kept != "" {
			return "unchanged", kept, err
		}
		lv.Set(l)
		return strings.ToLower(l.String()), "", nil
	}}
}

// reloaders lists what SIGHUP reloads: the log level, and the API's TLS
// certificate when the server serves TLS (api.Server.ReloadTLS).
func (o *lifecycleOpts) reloaders(lv *slog.LevelVar, srv any) []lifecycle.Reloader {
	rs := []lifecycle.Reloader{o.levelReloader(lv)}
	if c, ok := srv.(interface{ TLSConfig() *tls.Config }); ok && c.TLSConfig() == nil {
		return rs // no TLS: nothing to reload
	}
	if t, ok := srv.(interface{ ReloadTLS() error }); ok {
		rs = append(rs, lifecycle.Reloader{What: "TLS certificate", Reload: func() (string, string, error) {
			if err := t.ReloadTLS(); err != nil {
				return "", "", err
			}
			return "reloaded", "", nil
		}})
	}
	return rs
}
