package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/internal/testutil"
)

func TestTheDebugAddressIsOffByDefaultAndHidden(t *testing.T) {
	plan, errs := setup(t, nil)
	if plan == nil {
		t.Fatalf("serve's defaults refused: %s", errs)
	}
	if plan.cfg.debugAddr != "" {
		t.Fatalf("debug address by default = %q, want none", plan.cfg.debugAddr)
	}
	code, out, _ := runGateway(t, nil, "serve", "--help")
	if code != exitOK || strings.Contains(out, "debug-addr") || !strings.Contains(out, "--bridge") {
		t.Fatalf("serve --help (exit %d) shows the hidden flag, or no flags:\n%s", code, out)
	}
}

func TestTheDebugAddressMustBeOnLoopback(t *testing.T) {
	for _, addr := range []string{":6060", "0.0.0.0:6060", "[::]:6060", "192.0.2.1:6060", "example.com:6060"} {
		plan, errs := setup(t, nil, "--debug-addr", addr)
		if plan != nil || !strings.Contains(errs, "--debug-addr") || !strings.Contains(errs, "loopback") {
			t.Errorf("--debug-addr %s: plan %v, stderr %q; want a usage error naming loopback", addr, plan != nil, errs)
		}
	}
	if plan, errs := setup(t, nil, "--debug-addr", "127.0.0.1:6060"); plan == nil || plan.cfg.debugAddr != "127.0.0.1:6060" {
		t.Fatalf("--debug-addr 127.0.0.1:6060 refused: %s", errs)
	}
}

func TestTheDebugAddressServesPprof(t *testing.T) {
	addr := testutil.FreePort(t)
	startBinary(t, t.TempDir(), "--debug-addr", addr)
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "goroutine profile") {
		t.Fatalf("GET /debug/pprof/goroutine: %s\n%.500s", resp.Status, b)
	}
}
