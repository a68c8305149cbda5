package main

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/observability"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// startGateway serves a gateway in process in a gatewaytest World under
// root, for the tests that need what no flag reaches: serveConfig fields (a
// remote leg with a tuned stream, an injected DID resolver) or this
// process's own state (its hop token). Everything else about the gateway
// (its World, client, CLI verbs, stop) is the harness's, and every other
// test runs the binary (startBinary).
func startGateway(tb testing.TB, root string, opts ...func(*serveConfig)) *gatewaytest.Gateway {
	tb.Helper()
	w := gatewaytest.WorldAt(tb, root)
	cfg := serveConfig{
		stateDir: w.StateDir, name: "gateway", settle: 200 * time.Millisecond,
		mode: 2, getenv: w.Getenv, bridge: true,
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
	return gatewaytest.Attach(tb, w, cfg.name, done, cancel)
}

// startBinary starts the gateway binary in a gatewaytest World under root,
// named gateway, with the in-process starter's short settle and args: the
// end-to-end tests need nothing from inside the process.
func startBinary(tb testing.TB, root string, args ...string) *gatewaytest.Gateway {
	tb.Helper()
	return gatewaytest.Start(tb, gatewaytest.WorldAt(tb, root), "gateway", append([]string{"--settle", "200ms"}, args...)...)
}
