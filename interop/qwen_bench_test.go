package interop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/interop/qwencli"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// sinkReadTimeout bounds the wait for one frame to reach the sink: a send
// that never arrives fails the benchmark rather than hanging it.
const sinkReadTimeout = 10 * time.Second

// BenchmarkQwenSend runs, in one loop against one Qwen-protocol inbox, the
// gateway's Qwen send path (control API POST /v1/messages until the inbox
// has read the frame) and @qwen-code/sdk's PeerEndpoint.send (a command to
// node until the inbox has read the frame), both addressing the inbox by
// name, and reports both latencies and their ratio.
//
// Neither sender paces for the inbox: the gateway's mirror is skipped with
// Unpaced, and PeerEndpoint.send has no sender-side pacing at all (only a
// cap of 64 sends in flight). Bodies are unique all the same, so a receiver
// that dedups would not change the result.
func BenchmarkQwenSend(b *testing.B) {
	needQwenSDK(b)
	w := gatewaytest.NewWorld(b)
	sink := startQwenSink(b, w, "qwen-sink")
	g := gatewaytest.Start(b, w, "gateway-bench", "--log-level", "info")
	ep := qwencli.StartEndpoint(b, qwencli.EndpointOptions{Name: "sdk-bench", QwenHome: w.QwenHome, XDGRuntimeDir: w.Runtime})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := g.Client
	waitSinkListed(b, c, ep, sink.name)

	gwSend := func(body string) error {
		o, err := c.Send(ctx, api.SendBody{To: sink.name, Body: body, Unpaced: true})
		if err == nil && o.Status == message.StatusFailed {
			err = fmt.Errorf("the gateway reports the send failed: %+v", o.Receipts)
		}
		return err
	}
	sdkSend := func(body string) error {
		res, err := ep.Send(ctx, qwencli.SendOptions{To: sink.name, Content: body, FromMode: qwencli.FromPrompting})
		if err == nil && res.Kind != "sent" {
			err = fmt.Errorf("PeerEndpoint.send: %+v", res)
		}
		return err
	}
	run := uuid.NewString()[:8]
	var gw, sdk []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Alternate which goes first, so neither always runs on a cache
		// the other just warmed.
		first, second := &gw, &sdk
		firstSend, secondSend, firstName, secondName := gwSend, sdkSend, "gw", "sdk"
		if i%2 == 1 {
			first, second = second, first
			firstSend, secondSend, firstName, secondName = secondSend, firstSend, secondName, firstName
		}
		*first = append(*first, sink.timeSend(b, firstSend, fmt.Sprintf("%s bench %d %s", firstName, i, run)))
		*second = append(*second, sink.timeSend(b, secondSend, fmt.Sprintf("%s bench %d %s", secondName, i, run)))
	}
	b.StopTimer()
	b.ReportMetric(float64(testutil.Percentile(sdk, 0.5).Microseconds()), "sdk-p50-µs")
	b.ReportMetric(float64(testutil.Percentile(sdk, 0.99).Microseconds()), "sdk-p99-µs")
	b.ReportMetric(float64(testutil.Percentile(gw, 0.5).Microseconds()), "gw-p50-µs")
	b.ReportMetric(float64(testutil.Percentile(gw, 0.99).Microseconds()), "gw-p99-µs")
	b.ReportMetric(float64(testutil.Mean(gw))/float64(max(1, testutil.Mean(sdk))), "gw/sdk")
}

// needQwenSDK skips without GATEWAY_INTEROP=1, like needQwen, and fails
// when @qwen-code/sdk is missing or of another version. The benchmark needs
// node and the SDK, not the Claude or Qwen Code CLIs.
func needQwenSDK(tb testing.TB) {
	tb.Helper()
	testutil.Interop(tb, "interop benchmarks need GATEWAY_INTEROP=1 and @qwen-code/sdk (bash scripts/test.sh)")
	dir, err := qwencli.NodeModules()
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "@qwen-code", "sdk", "package.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(raw, &pkg); err != nil {
		tb.Fatalf("@qwen-code/sdk package.json: %v", err)
	}
	if pkg.Version != qwencli.SDKVersion {
		tb.Fatalf("@qwen-code/sdk is %s, want %s", pkg.Version, qwencli.SDKVersion)
	}
}

// waitSinkListed waits until both senders list the sink by name, so the
// first timed send does not pay for discovering it.
func waitSinkListed(tb testing.TB, c *api.Client, ep *qwencli.Endpoint, name string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ss, err1 := c.Sessions(ctx)
		ps, err2 := ep.List(ctx)
		if err := errors.Join(err1, err2); err != nil {
			tb.Fatal(err)
		}
		inGW := slices.ContainsFunc(ss, func(s message.Session) bool { return s.Name == name && s.Protocol == message.ProtocolQwen })
		inSDK := slices.ContainsFunc(ps, func(p qwencli.PeerSession) bool { return p.Name == name })
		if inGW && inSDK {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.Fatalf("the sink %q is not listed by both the gateway and the SDK", name)
}

// qwenSink is a Qwen-protocol inbox published with a kind "external"
// record. It checks the auth line and the toSessionId pin, and reports
// each user frame it reads. It sends no receipts: neither sender waits for
// one (both wait only for the inbox to close the connection, which it does
// at the sender's EOF).
type qwenSink struct {
	name      string
	sessionID string
	path      string
	read      chan sinkRead // one per user frame or per fault
}

// sinkRead is a user frame read, or a fault that should fail the run.
type sinkRead struct {
	content string
	at      time.Time
	err     error
}

func startQwenSink(tb testing.TB, w *gatewaytest.World, name string) *qwenSink {
	tb.Helper()
	s := &qwenSink{name: name, sessionID: uuid.NewString(), path: filepath.Join(w.Root, "sink", "in.sock"), read: make(chan sinkRead, 16)}
	token := qwen.NewIPCToken()
	if err := safefile.EnsureDir(filepath.Dir(s.path)); err != nil {
		tb.Fatal(err)
	}
	ln, err := uds.Listen(s.path, uds.Limits{})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	auth := qwen.Authenticator{IPCToken: token}
	go func() {
		defer close(done)
		_ = ln.Serve(ctx, func(ctx context.Context, c *uds.Conn) { s.serve(ctx, c, auth) })
	}()
	tb.Cleanup(func() { cancel(); <-done })

	pid := os.Getpid()
	procStart, ok := qwen.ProcStartToken(pid)
	if !ok {
		tb.Fatal("no procStart for the test process")
	}
	ns, err := uds.PidNamespace(pid)
	if err != nil {
		tb.Fatal(err)
	}
	rec := qwen.Record{PID: pid, ProcStart: procStart, PidNS: ns, SessionID: s.sessionID, Cwd: w.Root,
		Name: name, StartedAt: time.Now().UnixMilli(), Kind: qwen.KindExternal, IPCPath: s.path, IPCToken: token}
	raw, err := rec.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	dir := qwen.SessionsDir(w.QwenHome)
	if err := safefile.EnsureDir(dir); err != nil {
		tb.Fatal(err)
	}
	recPath := filepath.Join(dir, qwen.RecordFileName(pid, qwen.NewSuffix()))
	if err := safefile.WriteAtomic(recPath, raw); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.Remove(recPath) })
	return s
}

// serve reads one connection to its end. A connection that sends nothing
// is a liveness probe (both senders probe before they send) and is not
// reported.
func (s *qwenSink) serve(ctx context.Context, c *uds.Conn, auth qwen.Authenticator) {
	authed := false
	for {
		line, err := c.ReadLine()
		if err != nil {
			return // EOF: returning closes our side, which ends the sender's wait
		}
		if qwen.IsBlank(line) {
			continue
		}
		if !authed {
			if _, ok := auth.Authenticate(line); !ok {
				s.report(ctx, sinkRead{err: fmt.Errorf("first line is not our auth line: %q", line)})
				return
			}
			authed = true
			continue
		}
		l, err := qwen.ParseLine(line)
		switch {
		case err != nil:
			s.report(ctx, sinkRead{err: fmt.Errorf("unreadable line %q: %w", line, err)})
		case l.User == nil:
			// A receipt: nobody here sent anything to be answered.
		case l.User.ToSessionID != s.sessionID:
			s.report(ctx, sinkRead{err: fmt.Errorf("frame pinned to %q, not the sink's session", l.User.ToSessionID)})
		default:
			s.report(ctx, sinkRead{content: l.User.Content, at: time.Now()})
		}
	}
}

func (s *qwenSink) report(ctx context.Context, r sinkRead) {
	select {
	case s.read <- r:
	case <-ctx.Done():
	}
}

// timeSend runs send(body) and returns the time from its start until the
// sink read that body. send returns once the sender is done with the
// connection, which is after the read, so the next send never overlaps it.
func (s *qwenSink) timeSend(tb testing.TB, send func(body string) error, body string) time.Duration {
	tb.Helper()
	t0 := time.Now()
	if err := send(body); err != nil {
		tb.Fatalf("sending %q: %v", body, err)
	}
	select {
	case r := <-s.read:
		if r.err != nil {
			tb.Fatalf("the sink: %v", r.err)
		}
		if r.content != body {
			tb.Fatalf("the sink read %q, want %q", r.content, body)
		}
		return r.at.Sub(t0)
	case <-time.After(sinkReadTimeout):
		tb.Fatalf("the sink did not read %q within %v", body, sinkReadTimeout)
		return 0
	}
}
