package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/observability"
)

// testGateway is a gateway served in-process with every directory under one
// temporary root.
type testGateway struct {
	*api.Client
	stateDir  string
	configDir string
	runtime   string
	qwenHome  string
	stop      func()
}

func startGateway(tb testing.TB, root string, opts ...func(*serveConfig)) *testGateway {
	tb.Helper()
	g := &testGateway{
		stateDir:  filepath.Join(root, "state"),
		configDir: filepath.Join(root, "claude"),
		runtime:   filepath.Join(root, "run"),
	}
	for _, d := range []string{g.configDir, g.runtime} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			tb.Fatal(err)
		}
	}
	g.qwenHome = filepath.Join(root, "qwen")
	env := map[string]string{"CLAUDE_CONFIG_DIR": g.configDir, "XDG_RUNTIME_DIR": g.runtime,
		"QWEN_HOME": g.qwenHome, "HOME": root, "TMPDIR": root}
	cfg := serveConfig{
		stateDir: g.stateDir, name: "gateway", settle: 200 * time.Millisecond,
		mode: 2, getenv: func(k string) string { return env[k] }, bridge: true,
		workerEnv: []string{"GATEWAY_TEST_AS_GATEWAY=1"},
	}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	logTo := io.Writer(io.Discard)
	if os.Getenv("GATEWAY_TEST_LOG") != "" {
		logTo = os.Stderr
	}
	go func() { done <- serve(ctx, observability.NewLogger(logTo, nil), cfg) }()
	g.Client = api.NewUnixClient(filepath.Join(g.stateDir, "gateway.sock"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		rctx, rcancel := context.WithTimeout(context.Background(), time.Second)
		_, err := g.Sessions(rctx)
		rcancel()
		if err == nil {
			break
		}
		select {
		case err := <-done:
			cancel()
			tb.Fatalf("gateway did not start: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			tb.Fatalf("gateway not answering: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopped := false
	g.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("serve: %v", err)
		}
	}
	tb.Cleanup(g.stop)
	return g
}
