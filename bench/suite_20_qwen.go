package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sessiongateway/gateway/interop/qwencli"
)

func init() { register("qwen", qwenRows) }

// qwenRows: control API POST /v1/messages (unpaced) until a bare Qwen
// inbox has read the frame, beside @qwen-code/sdk's PeerEndpoint.send to
// the same inbox (a command to node until the inbox has read the frame),
// both by name, taking turns, as BenchmarkQwenSend measures them.
// Without node and the SDK the SDK's side says so and the gateway's is
// measured alone.
func qwenRows(ctx context.Context, e *Env) ([]Row, error) {
	st, err := openStage(ctx, e, "bench-qwen", startQwenSink, "--bridge=false")
	if err != nil {
		return nil, err
	}
	w, sink, g := st.W, st.Sink, st.G
	via := func(i int) error { return g.Send(ctx, sink.name, fmt.Sprintf("gw bench %d", i), true) }
	senders := []func(int) error{via}
	ep, noSDK := startSDK(ctx, e, w, sink.name)
	if ep != nil {
		senders = append(senders, func(i int) error {
			res, err := ep.Send(ctx, qwencli.SendOptions{To: sink.name, Content: fmt.Sprintf("sdk bench %d", i), FromMode: qwencli.FromPrompting})
			if err == nil && res.Kind != "sent" {
				err = fmt.Errorf("PeerEndpoint.send: %+v", res)
			}
			return err
		})
	}
	if _, err := sequential(ctx, sink, e.N(20, 3), senders...); err != nil {
		return nil, err
	}
	lat, err := sequential(ctx, sink, e.N(400, 10), senders...)
	if err != nil {
		return nil, err
	}
	n := e.N(2000, 50)
	cpu0 := g.CPU()
	if _, err := sequential(ctx, sink, n, via); err != nil {
		return nil, err
	}
	cpuRow := Row{Path: "API -> Qwen, gateway CPU per message", Gateway: ms((g.CPU() - cpu0) / time.Duration(n))}
	if err := e.Profile(ctx, g, "sequential", func() error {
		_, err := sequential(ctx, sink, 200, via)
		return err
	}); err != nil {
		return nil, err
	}
	const sdkName = "@qwen-code/sdk PeerEndpoint.send"
	if ep == nil {
		return []Row{
			{Path: "API -> Qwen, 1 sender (msg/s)", Gateway: lat[0].rate().String(), Counterpart: "n/a: " + noSDK, Target: ">= 8x"},
			latencyRow("API -> Qwen, 1 sender (latency)", lat[0], nil, "", 0, 0),
			cpuRow,
		}, nil
	}
	return []Row{
		rateRow("API -> Qwen, 1 sender (msg/s)", lat[0].rate(), lat[1].rate(), sdkName, 8),
		latencyRow("API -> Qwen, 1 sender (latency)", lat[0], lat[1], sdkName, 0, 0),
		cpuRow,
	}, nil
}

// startSDK starts a PeerEndpoint in w and waits until it lists name; nil
// and why when node or the SDK is missing.
func startSDK(ctx context.Context, e *Env, w *World, name string) (*qwencli.Endpoint, string) {
	if _, err := qwencli.NodeModules(); err != nil {
		return nil, "no @qwen-code/sdk (scripts/test.sh installs it)"
	}
	ep, err := qwencli.StartPeer(qwencli.EndpointOptions{Name: "sdk-bench", QwenHome: w.QwenHome, XDGRuntimeDir: w.Runtime})
	if err != nil {
		return nil, err.Error()
	}
	e.Cleanup(func() { ep.Close() })
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ps, err := ep.List(ctx)
		if err != nil {
			return nil, err.Error()
		}
		if slices.ContainsFunc(ps, func(p qwencli.PeerSession) bool { return p.Name == name }) {
			return ep, ""
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, errors.New("the SDK does not list the sink").Error()
}
