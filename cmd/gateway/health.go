package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"
)

// runHealth is a probe for service managers and the container HEALTHCHECK:
// a FROM scratch image has no curl, so the binary asks itself. It exits 0
// when the running gateway answers /healthz (or, with --ready, /readyz)
// with 200, and 1 otherwise, saying why on stderr.
func runHealth(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "health")
	sd := stateDirFlag(fs, e)
	base := fs.String("url", "", "probe the TCP API at this base URL (http://host:port) instead of the control socket")
	ready := fs.Bool("ready", false, "probe /readyz (every enabled leg ready) instead of /healthz (process alive)")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 0 {
		fmt.Fprintln(e.stderr, "usage: gateway health [--state-dir D | --url http://HOST:PORT] [--ready] [--timeout D]")
		return exitUsage
	}
	path := "/healthz"
	if *ready {
		path = "/readyz"
	}
	target, client := probeTarget(*sd, *base)
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	body, err := probe(ctx, client, target, path)
	if err != nil {
		fmt.Fprintf(e.stderr, "gateway: health: %v\n", err)
		return exitError
	}
	fmt.Fprintln(e.stdout, body)
	return exitOK
}

// probeTarget picks the base URL and client: the control socket of the
// state directory unless a TCP base URL is given. Neither needs the API
// token: /healthz and /readyz answer without one so probes need no secret.
func probeTarget(stateDir, base string) (string, *http.Client) {
	if base != "" {
		return strings.TrimSuffix(base, "/"), &http.Client{}
	}
	sock := filepath.Join(stateDir, "gateway.sock")
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	return "http://gateway", &http.Client{Transport: tr}
}

// maxProbeBody caps what a probe reads: the answers are a few hundred bytes.
const maxProbeBody = 64 << 10

// probe GETs base+path and returns the compact JSON answer on 200; any
// other status is an error carrying the answer, so a 503 from /readyz says
// which leg is not ready.
func probe(ctx context.Context, c *http.Client, base, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", fmt.Errorf("gateway not reachable (is `gateway serve` running with the same --state-dir?): %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxProbeBody))
	if err != nil {
		return "", fmt.Errorf("%s: reading the answer: %w", path, err)
	}
	text := compactJSON(b)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answered %s: %s", path, resp.Status, text)
	}
	return text, nil
}

// compactJSON prints an answer on one line; what is not JSON is quoted.
func compactJSON(b []byte) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Sprintf("%q", strings.TrimSpace(string(b)))
	}
	out, _ := json.Marshal(v)
	return string(out)
}
