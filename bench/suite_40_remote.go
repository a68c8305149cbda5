package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/leg/remote/stream"
)

func init() {
	register("remote-decode", decodeRows)
	register("remote-idle", idleRows)
}

// decodeRows: one remote stream decoding a busy session's events, over
// each transport.
func decodeRows(ctx context.Context, e *Env) ([]Row, error) {
	var rows []Row
	for _, tr := range []stream.Transport{stream.TransportWS, stream.TransportSSE} {
		r, err := decodeRow(ctx, e, tr)
		if err != nil {
			return rows, err
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// idleRows: a gateway following thousands of idle remote sessions.
func idleRows(ctx context.Context, e *Env) ([]Row, error) {
	r, err := idleRow(ctx, e)
	if err != nil {
		return nil, err
	}
	return []Row{r}, nil
}

// benchEvent is a busy session's typical event: an assistant message with
// a text block and a tool call.
func benchEvent(i int) string {
	return fmt.Sprintf(`{"type":"assistant","uuid":"evt_%d","message":{"id":"msg_%d","model":"claude-opus-4-6","role":"assistant","content":[{"type":"text","text":"Reading the file to see what the handler does with an empty body."},{"type":"tool_use","id":"toolu_%d","name":"Read","input":{"file_path":"/srv/app/api/server.go"},"caller":{"type":"direct"}}],"stop_reason":"tool_use","usage":{"input_tokens":12345,"output_tokens":678,"cache_read_input_tokens":9000}}}`, i, i, i)
}

// decodeRow: the remote leg's stream client (leg/remote/stream)
// reading n stored events of one session from the fake cloud (WebSocket
// replay, or the v2 event stream from its start) until the last is
// delivered: read, frame, decode, de-duplicate. Beside it, the same lines
// decoded by encoding/json into a generic value, from memory. The fake
// serves from this process, so its allocations and CPU count in the
// stream's.
func decodeRow(ctx context.Context, e *Env, tr stream.Transport) ([]Row, error) {
	n := e.N(100_000, 500)
	const token, org = "tok-bench", "org-bench"
	cloud, err := fakecloud.Listen(fakecloud.Options{Token: token, OrgUUID: org, QueueLen: 64})
	if err != nil {
		return nil, err
	}
	defer cloud.Close()
	id := cloud.CreateSession("bench")
	for i := range n {
		cloud.Emit(id, benchEvent(i))
	}
	cfg := stream.NewConfig(cloud.URL(), org, id)
	cfg.Transport, cfg.Initialize = tr, false
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Header = func(context.Context) (http.Header, error) {
		return http.Header{"Authorization": {"Bearer " + token}, "Anthropic-Version": {"2023-06-01"},
			"Anthropic-Beta": {"ccr-byoc-2025-07-29"}, "X-Organization-Uuid": {org}}, nil
	}
	// With a resume point the WebSocket asks for replay; the event stream
	// without one starts at the beginning.
	cfg.ResumeAfterID = "evt_none"
	st, err := stream.New(cfg)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := 0
	done := make(chan struct{})
	deliver := func(ctx context.Context, u stream.Update) error {
		if u.Message.Assistant == nil {
			return fmt.Errorf("update %s is not an assistant message", u.Message.Type)
		}
		if got++; got == n {
			close(done)
		}
		return ctx.Err()
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := cpuTime()
	t0 := time.Now()
	ran := make(chan error, 1)
	go func() { ran <- st.RunFunc(sctx, deliver, nil) }()
	select {
	case <-done:
	case err := <-ran:
		return nil, fmt.Errorf("the %s stream ended after %d of %d events: %v", tr, got, n, err)
	case <-time.After(5 * time.Minute):
		return nil, fmt.Errorf("the %s stream delivered %d of %d events in 5 minutes", tr, got, n)
	}
	span := time.Since(t0)
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&m1)
	cancel()
	<-ran
	gw := Rate{N: n, Span: span}
	gwAllocs := float64(m1.Mallocs-m0.Mallocs) / float64(n)

	// The counterpart: the same lines, one per "\n", through a bufio
	// scanner and json.Unmarshal into any. They are made only now: held
	// during the stream's run, they would add to the heap every collection
	// there marks (the fake's copy is marked during both runs).
	var all bytes.Buffer
	for i := range n {
		all.WriteString(benchEvent(i))
		all.WriteByte('\n')
	}
	runtime.GC()
	runtime.ReadMemStats(&m0)
	cpu0 = cpuTime()
	t0 = time.Now()
	sc := bufio.NewScanner(bytes.NewReader(all.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, err
		}
	}
	raw := Rate{N: n, Span: time.Since(t0)}
	rawCPU := cpuTime() - cpu0
	runtime.ReadMemStats(&m1)
	rawAllocs := float64(m1.Mallocs-m0.Mallocs) / float64(n)

	perEvent := func(d time.Duration) string {
		return fmt.Sprintf("%.1f µs CPU an event", float64(d.Nanoseconds())/1e3/float64(n))
	}
	name := map[stream.Transport]string{stream.TransportWS: "WebSocket", stream.TransportSSE: "SSE"}[tr]
	const counterpart = "encoding/json into any, same lines from memory"
	return []Row{
		{Path: "remote stream decode, " + name + " (events/s)", Gateway: thousands(gw.PerSec()) + " events/s, " + perEvent(cpu),
			Counterpart: thousands(raw.PerSec()) + ", " + perEvent(rawCPU) + " (" + counterpart + ")", Ratio: ratio(gw.PerSec(), raw.PerSec()),
			Target: ">= 100,000 events/s", Met: judge(gw.PerSec() >= 100_000)},
		{Path: "remote stream decode, " + name + " (allocations/event)", Gateway: fmt.Sprintf("%.1f", gwAllocs),
			Counterpart: fmt.Sprintf("%.1f (%s)", rawAllocs, counterpart), Ratio: ratio(gwAllocs, rawAllocs),
			Target: "< 20", Met: judge(gwAllocs < 20)},
	}, nil
}

// idleRow: a gateway (--bridge=false) following n idle remote sessions
// over the WebSocket on the fake cloud (`gateway demo-cloud`, its own
// process), once all n are open and a few seconds after; its resident
// memory beside the same gateway's before it follows any, and what the
// gateway's runtime says it holds (heap in use, goroutine stacks,
// goroutines) to tell which counts. Under -profile its heap profile is
// written too.
func idleRow(ctx context.Context, e *Env) (Row, error) {
	n := e.N(10_000, 50)
	w, err := e.NewWorld()
	if err != nil {
		return Row{}, err
	}
	url, org, tokenFile, err := startDemoCloud(e, w, n)
	if err != nil {
		return Row{}, err
	}
	idle, err := e.StartGateway(ctx, w, "--bridge=false")
	if err != nil {
		return Row{}, err
	}
	time.Sleep(2 * time.Second)
	base, err := rssKB(idle.PID())
	if err != nil {
		return Row{}, err
	}
	idle.stop()
	args := []string{"--bridge=false", "--remote-url", url, "--remote-org", org,
		"--remote-token-file", tokenFile, "--remote-follow", "all"}
	debugAddr := ""
	if e.ProfileDir == "" { // else StartGateway gives it one
		if debugAddr, err = freeLoopback(); err != nil {
			return Row{}, err
		}
		args = append(args, "--debug-addr", debugAddr)
	}
	g, err := e.StartGateway(ctx, w, args...)
	if err != nil {
		return Row{}, err
	}
	if debugAddr == "" {
		debugAddr = g.debugAddr
	}
	t0 := time.Now()
	for {
		ws, err := liveStreams(ctx, url, org, tokenFile)
		if err == nil && ws >= n {
			break
		}
		if time.Since(t0) > 10*time.Minute {
			return Row{}, fmt.Errorf("%d of %d sessions open after 10 minutes (%v)", ws, n, err)
		}
		select {
		case <-ctx.Done():
			return Row{}, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	open := time.Since(t0)
	time.Sleep(e.settle())
	rss, err := rssKB(g.PID())
	if err != nil {
		return Row{}, err
	}
	held, err := runtimeHeld(ctx, debugAddr)
	if err != nil {
		return Row{}, err
	}
	if e.ProfileDir != "" {
		out := filepath.Join(e.ProfileDir, e.suite+"-idle.heap.pprof")
		if err := fetch(ctx, "http://"+debugAddr+"/debug/pprof/heap", out); err != nil {
			return Row{}, err
		}
		fmt.Fprintf(os.Stderr, "bench: heap profile of %d idle sessions in %s\n", n, out)
	}
	mb := func(kb int) string { return fmt.Sprintf("%d MB", (kb+512)/1024) }
	return Row{
		Path: fmt.Sprintf("%s idle followed remote sessions, WebSocket (RSS)", thousands(float64(n))),
		Gateway: fmt.Sprintf("%s (%.1f KB a session; heap in use %s, stacks %s, %.1f goroutines a session; all open in %v)",
			mb(rss), float64(rss-base)/float64(n), mb(held.heap>>10), mb(held.stack>>10),
			float64(held.goroutines)/float64(n), open.Round(100*time.Millisecond)),
		Counterpart: mb(base) + " (the same gateway following none)",
		Ratio:       ratio(float64(rss), float64(base)),
		Target:      "< 300 MB",
		Met:         judge(n < 10_000 || rss < 300*1024),
	}, nil
}

// held is what a gateway's runtime holds, in bytes.
type held struct {
	heap, stack int // heap spans in use, goroutine stacks
	goroutines  int
}

// runtimeHeld reads it from the gateway's debug server: the heap
// profile's text form ends with the runtime's memory statistics.
func runtimeHeld(ctx context.Context, debugAddr string) (held, error) {
	var h held
	get := func(path string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", "http://"+debugAddr+path, nil)
		if err != nil {
			return "", err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	heap, err := get("/debug/pprof/heap?debug=1")
	if err != nil {
		return h, err
	}
	for line := range strings.SplitSeq(heap, "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapInuse = "); ok {
			h.heap, _ = strconv.Atoi(v)
		}
		if v, ok := strings.CutPrefix(line, "# Stack = "); ok { // "in use / from the OS"
			h.stack, _ = strconv.Atoi(strings.Fields(v)[0])
		}
	}
	gs, err := get("/debug/pprof/goroutine?debug=1")
	if err != nil {
		return h, err
	}
	first, _, _ := strings.Cut(gs, "\n")
	if _, err := fmt.Sscanf(first, "goroutine profile: total %d", &h.goroutines); err != nil || h.heap == 0 || h.stack == 0 {
		return h, fmt.Errorf("no memory statistics from %s (%v)", debugAddr, err)
	}
	return h, nil
}

// settle is how long a gateway is left after its sessions opened before
// its memory is read: what the start-up left behind is collected by then.
func (e *Env) settle() time.Duration {
	if e.Short {
		return time.Second
	}
	return 10 * time.Second
}

// startDemoCloud runs `gateway demo-cloud` with n sessions in w until the
// suite ends and returns its URL, organisation and token file.
func startDemoCloud(e *Env, w *World, n int) (url, org, tokenFile string, err error) {
	cmd := exec.Command(e.Bin, "demo-cloud", "--sessions", strconv.Itoa(n), "--state-dir", filepath.Join(w.Root, "demo"))
	cmd.Env = w.Env()
	logs := &capped{max: 1 << 16}
	cmd.Stderr = logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", "", "", err
	}
	if err := cmd.Start(); err != nil {
		return "", "", "", err
	}
	e.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	reURL := regexp.MustCompile(`(http://127\.0\.0\.1:\d+) \(org ([0-9a-f-]+)\)`)
	for sc.Scan() {
		line := sc.Text()
		if m := reURL.FindStringSubmatch(line); m != nil {
			url, org = m[1], m[2]
		}
		if f, ok := strings.CutPrefix(line, "token file: "); ok {
			tokenFile = strings.TrimSpace(f)
		}
		if strings.HasPrefix(line, "try:") {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if url == "" || tokenFile == "" {
		return "", "", "", fmt.Errorf("demo-cloud printed no URL or token file: %s", logs)
	}
	return url, org, tokenFile, nil
}

// liveStreams asks the fake cloud how many subscribe WebSockets are open.
func liveStreams(ctx context.Context, url, org, tokenFile string) (int, error) {
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, "GET", url+fakecloud.LivePath, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	for _, h := range fakecloud.DefaultRequiredHeaders {
		req.Header.Set(h, "bench")
	}
	req.Header.Set("x-organization-uuid", org)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var live struct {
		WebSockets int `json:"websockets"`
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s %s", url+fakecloud.LivePath, resp.Status)
	}
	err = json.NewDecoder(resp.Body).Decode(&live)
	return live.WebSockets, err
}

// cpuTime is the CPU this process has used, user and system: on a shared
// machine it says what an event costs when the wall clock cannot.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssKB reads a process's resident set size.
func rssKB(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}
