package main

import (
	"flag"
	"fmt"
	"net/url"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/clock"
)

// apiOpts are serve's flags hardening the TCP control API (--api); the
// configuration layer fills each from its GATEWAY_* variable or the config
// file when the command line leaves it alone.
type apiOpts struct {
	tlsCert, tlsKey string
	corsOrigin      string
	prefix          string
	limit           clock.Bucket // --api-rate and --api-burst
}

func apiFlags(fs *flag.FlagSet, _ *env) *apiOpts {
	o := &apiOpts{}
	fs.StringVar(&o.tlsCert, "tls-cert", "", "serve --api over TLS 1.2+ with this PEM certificate (chain) file; re-read when it changes or on SIGHUP (env GATEWAY_TLS_CERT)")
	fs.StringVar(&o.tlsKey, "tls-key", "", "the PEM private key of --tls-cert (env GATEWAY_TLS_KEY)")
	fs.StringVar(&o.corsOrigin, "cors-origin", "", "the one browser origin allowed to call --api, like https://ui.example; none by default (env GATEWAY_CORS_ORIGIN)")
	fs.StringVar(&o.prefix, "api-prefix", "", "serve --api and the console under this path, like /gateway, for a reverse proxy that forwards one path (env GATEWAY_API_PREFIX)")
	fs.Float64Var(&o.limit.Rate, "api-rate", api.DefaultRateLimit.Rate, "requests a second each --api client (token, or IP before one) may make on average; 0 for no limit (a negative rate too, as before) (env GATEWAY_API_RATE)")
	fs.IntVar(&o.limit.Burst, "api-burst", api.DefaultRateLimit.Burst, "requests each --api client may make at once (env GATEWAY_API_BURST)")
	return o
}

// check validates the flags against --api.
func (o *apiOpts) check(apiAddr string) error {
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return fmt.Errorf("--tls-cert and --tls-key go together")
	}
	if o.tlsCert != "" && apiAddr == "" {
		return fmt.Errorf("--tls-cert needs --api: the Unix socket has no TLS")
	}
	if o.corsOrigin != "" {
		u, err := url.Parse(o.corsOrigin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return fmt.Errorf("--cors-origin %q: want an origin like https://ui.example", o.corsOrigin)
		}
	}
	if err := api.CheckPrefix(o.prefix); err != nil {
		return err
	}
	if !o.limit.Off() && o.limit.Burst < 1 {
		return fmt.Errorf("--api-burst %d: want at least 1", o.limit.Burst)
	}
	return nil
}

// rateLimit is the api.Config value: --api-rate 0 turns limits off.
func (o *apiOpts) rateLimit() clock.Bucket {
	if o.limit.Off() {
		return api.NoRateLimit
	}
	return o.limit
}

// newAPIServer checks the --api hardening flags, loads the TLS certificate
// and builds the server: cfg with c.api's TLS, CORS, rate limits and the
// scoped tokens of <state-dir>/api-tokens.json.
func newAPIServer(c serveConfig, cfg api.Config) (*api.Server, error) {
	o := c.api
	if o == nil {
		o = &apiOpts{limit: api.DefaultRateLimit}
	}
	if err := o.check(c.apiAddr); err != nil {
		return nil, err
	}
	if o.tlsCert != "" {
		cr, err := api.NewCertReloader(o.tlsCert, o.tlsKey)
		if err != nil {
			return nil, err
		}
		cfg.TLS = cr
	}
	cfg.Tokens = api.NewTokenFile(c.stateDir, nil)
	dir, err := c.files.prepare(c.stateDir)
	if err != nil {
		return nil, err
	}
	cfg.FilesDir = dir
	cfg.CORSOrigin, cfg.Prefix = o.corsOrigin, o.prefix
	cfg.RateLimit = o.rateLimit()
	return api.NewServer(cfg), nil
}
