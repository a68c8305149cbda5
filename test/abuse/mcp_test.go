package abuse

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
	mcpleg "github.com/sessiongateway/gateway/leg/mcp"
	"github.com/sessiongateway/gateway/mcp"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// mcpOn talks raw MCP over HTTP to a gateway's control socket (every
// scope, as any same-user process has).
type mcpOn struct {
	t    *testing.T
	g    *gatewaytest.Gateway
	http *http.Client
}

func newMCP(t *testing.T, g *gatewaytest.Gateway) *mcpOn {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", g.Socket())
	}, MaxConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &mcpOn{t: t, g: g, http: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

// answer is one reply to a POST: its status, session, and JSON-RPC error
// message, if any.
type answer struct {
	status  int
	session string
	errMsg  string
	raw     string
}

func (m *mcpOn) post(session, body string, name string) answer {
	m.t.Helper()
	req, _ := http.NewRequest("POST", "http://gateway/mcp?name="+name, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := m.http.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	a := answer{status: resp.StatusCode, session: resp.Header.Get("Mcp-Session-Id"), raw: string(b)}
	data := b
	if i := bytes.Index(b, []byte("data: ")); i >= 0 {
		data, _, _ = bytes.Cut(b[i+len("data: "):], []byte("\n"))
	}
	var rpc struct{ Error *struct{ Message string } }
	if json.Unmarshal(data, &rpc) == nil && rpc.Error != nil {
		a.errMsg = rpc.Error.Message
	}
	return a
}

const mcpInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"abuser","version":"1"}}}`

// open initializes a session named name, and finishes (initialized) when
// join: then it is in the roster.
func (m *mcpOn) open(name string, join bool) answer {
	m.t.Helper()
	a := m.post("", mcpInit, name)
	if join && a.session != "" {
		m.post(a.session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "")
	}
	return a
}

func (m *mcpOn) del(session string) {
	req, _ := http.NewRequest("DELETE", "http://gateway/mcp", nil)
	req.Header.Set("Mcp-Session-Id", session)
	if resp, err := m.http.Do(req); err == nil {
		resp.Body.Close()
	}
}

// metrics reads the gateway's /metrics: each sample line's value by its
// name and labels as printed.
func (m *mcpOn) metrics() map[string]float64 {
	m.t.Helper()
	resp, err := m.http.Get("http://gateway/metrics")
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// sample is one reading of the gateway's runtime from /metrics.
type sample struct{ goroutines, heap float64 }

func (m *mcpOn) sample() sample {
	r := m.metrics()
	g, ok := r["go_goroutines"]
	if !ok {
		m.t.Fatal("/metrics has no go_goroutines")
	}
	return sample{goroutines: g, heap: r["go_memstats_heap_inuse_bytes"]}
}

// drops is the gateway's count of MCP drops for reason.
func (m *mcpOn) drops(reason string) float64 { return m.dropsOf("mcp", reason) }

// dropsOf is the gateway's count of leg's drops for reason.
func (m *mcpOn) dropsOf(leg, reason string) float64 {
	for k, v := range m.metrics() {
		if strings.HasPrefix(k, "gateway_drops_total{") && strings.Contains(k, `leg="`+leg+`"`) && strings.Contains(k, `reason="`+reason+`"`) {
			return v
		}
	}
	return 0
}

// settle waits until the gateway's goroutines are within slack of base.
func (m *mcpOn) settle(base sample, slack float64) sample {
	var s sample
	testutil.Within(10*time.Second, func() bool { s = m.sample(); return s.goroutines <= base.goroutines+slack })
	return s
}

// TestAnOversizedMCPBodyIsRefusedUnread posts 32 bodies of 16 MiB to /mcp,
// 8 at a time: each is a 413 with a JSON-RPC error saying what to do, the
// ones that declare their length are refused before a byte is read, and
// the gateway's peak memory grows by a few times the 4 MiB cap, not by
// what the bodies carry.
func TestAnOversizedMCPBodyIsRefusedUnread(t *testing.T) {
	g := gatewaytest.Start(t, gatewaytest.NewWorld(t), "gateway", "--legs", "claude")
	m := newMCP(t, g)
	sid := m.open("big", true).session
	base, peak0 := m.sample(), PeakRSS(t, g.PID)
	const size = 16 << 20
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	var mu sync.Mutex
	codes := map[int]int{}
	for i := range 32 {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var body io.Reader = io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send_message","arguments":{"to":"big","text":"`),
				io.LimitReader(zeros{}, size))
			if i%2 == 1 {
				body = io.NopCloser(body) // no declared length: read to the cap
			}
			req, _ := http.NewRequest("POST", "http://gateway/mcp", body)
			if i%2 == 0 {
				req.ContentLength = size + 200
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", sid)
			resp, err := m.http.Do(req)
			code := -1
			if err == nil {
				var rpc struct{ Error struct{ Message string } }
				_ = json.NewDecoder(resp.Body).Decode(&rpc)
				resp.Body.Close()
				code = resp.StatusCode
				if !strings.Contains(rpc.Error.Message, "send less") {
					t.Errorf("body %d: %s without the JSON-RPC error: %+v", i, resp.Status, rpc)
				}
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if codes[http.StatusRequestEntityTooLarge] == 0 || len(codes) > 2 || (len(codes) == 2 && codes[-1] == 0) {
		t.Errorf("answers: %v, want 413s (or a reset once the answer is out)", codes)
	}
	after := m.settle(base, 10)
	grew := PeakRSS(t, g.PID) - peak0
	t.Logf("32 x 16 MiB bodies: answers %v; peak RSS +%s; goroutines %v -> %v; heap in use %s -> %s",
		codes, MiB(grew), base.goroutines, after.goroutines, MiB(int64(base.heap)), MiB(int64(after.heap)))
	// 8 at a time, each read to at most the 4 MiB cap (twice that for the
	// garbage collector's slack): not the 128 MiB in flight.
	if grew > 8*2*mcp.MaxInput {
		t.Errorf("peak RSS grew by %s for bodies the cap refuses", MiB(grew))
	}
	if after.goroutines > base.goroutines+10 {
		t.Errorf("goroutines %v -> %v", base.goroutines, after.goroutines)
	}
	if a := m.post(sid, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, ""); a.status != http.StatusOK || a.errMsg != "" {
		t.Errorf("the session after the flood: %d %s", a.status, a.errMsg)
	}
	// A declared length over the cap is answered before the body is sent.
	c, err := net.Dial("unix", g.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n{", sid, size)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a declared %d-byte body, 1 byte sent: %v %v", size, resp, err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// TestOneProcessCannotHoldMoreThanItsShare opens MaxSessionsPerToken+40
// MCP sessions from one process on the control socket without closing
// any, most never finishing initialize: past the share each initialize is
// a JSON-RPC error saying what to do, counted as a drop, while a client
// with another token still joins; the gateway's goroutines grow by a
// bounded amount per session and come back once they are closed.
func TestOneProcessCannotHoldMoreThanItsShare(t *testing.T) {
	addr := testutil.FreePort(t)
	g := gatewaytest.Start(t, gatewaytest.NewWorld(t), "gateway", "--legs", "claude", "--api", addr)
	m := newMCP(t, g)
	base := m.sample()
	var ids []string
	refused := 0
	for i := range mcp.MaxSessionsPerToken + 40 {
		a := m.open(fmt.Sprintf("flood-%d", i), i%8 == 0)
		switch {
		case a.session != "" && a.errMsg == "":
			ids = append(ids, a.session)
		case strings.Contains(a.errMsg, "too many MCP sessions open with this token") && strings.Contains(a.errMsg, "DELETE"):
			refused++
		default:
			t.Fatalf("initialize %d: %d %s", i, a.status, a.raw)
		}
	}
	full := m.sample()
	if len(ids) != mcp.MaxSessionsPerToken || refused != 40 {
		t.Fatalf("%d sessions opened, %d refused; want %d and 40", len(ids), refused, mcp.MaxSessionsPerToken)
	}
	if d := m.drops(mcp.DropTokenShare); d != 40 {
		t.Errorf("drops counted for %s: %v, want 40", mcp.DropTokenShare, d)
	}
	perSession := (full.goroutines - base.goroutines) / float64(len(ids))
	if perSession > 4 {
		t.Errorf("%.1f goroutines per open session", perSession)
	}
	// Another token's client joins while this one's share is full.
	other := &mcpOn{t: t, g: g, http: &http.Client{Transport: bearer{mint(t, g, "other", "read,send"), "http://" + addr}, Timeout: 60 * time.Second}}
	if a := other.open("other", true); a.session == "" || a.errMsg != "" {
		t.Fatalf("another token past the first one's share: %d %s", a.status, a.raw)
	}
	g.WaitListed(t, "other")
	// And this one's client joins once one slot is freed.
	m.del(ids[0])
	ids = ids[1:]
	var legit answer
	// A refusal comes with a session id too (and an error): the slot may
	// be given back a moment after DELETE answers.
	testutil.Eventually(t, "a slot freed by DELETE", func() bool {
		legit = m.open("legit", true)
		return legit.session != "" && legit.errMsg == ""
	})
	g.WaitListed(t, "legit")
	for _, id := range append(ids, legit.session) {
		m.del(id)
	}
	after := m.settle(base, 10)
	t.Logf("%d sessions held (%d refused): goroutines %v -> %v (%.1f per session) -> %v after closing; heap in use %s -> %s -> %s",
		mcp.MaxSessionsPerToken, refused, base.goroutines, full.goroutines, perSession, after.goroutines, MiB(int64(base.heap)), MiB(int64(full.heap)), MiB(int64(after.heap)))
	if after.goroutines > base.goroutines+10 {
		t.Errorf("goroutines after closing every session: %v, were %v", after.goroutines, base.goroutines)
	}
}

// bearer sends each request to the TCP API at base with a token.
type bearer struct{ token, base string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	u, _ := url.Parse(b.base)
	r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, u.Host
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestAnHTTPClientThatVanishesLeavesTheRoster: a client holding its event
// stream whose connection goes away without DELETE leaves the roster
// within mcp.StreamGone, counted as gone, not after the 30 idle minutes.
func TestAnHTTPClientThatVanishesLeavesTheRoster(t *testing.T) {
	g := gatewaytest.Start(t, gatewaytest.NewWorld(t), "gateway", "--legs", "claude")
	m := newMCP(t, g)
	sid := m.open("ghost", true).session
	c, err := net.Dial("unix", g.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: gateway\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", sid)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("event stream: %v %v", resp, err)
	}
	g.WaitListed(t, "ghost")
	start := time.Now()
	c.Close()
	testutil.EventuallyWithin(t, mcp.StreamGone+10*time.Second, "ghost out of the roster", func() bool {
		_, ok := gatewaytest.FindSession(g.Listed(t), "ghost")
		return !ok
	})
	t.Logf("left the roster %v after its stream's connection closed", time.Since(start).Round(time.Millisecond))
	if d := m.drops(mcp.DropGone); d != 1 {
		t.Errorf("drops counted for %s: %v, want 1", mcp.DropGone, d)
	}
}

// TestBodiesPastMaxBodiesAreRefused: api.MaxBodies connections to the
// control socket each declare a 4 MiB body, send one byte and stall; a
// send meanwhile is a 429 counted as a drop, and once they go a send is
// served again.
func TestBodiesPastMaxBodiesAreRefused(t *testing.T) {
	g := gatewaytest.Start(t, gatewaytest.NewWorld(t), "gateway", "--legs", "claude")
	m := newMCP(t, g)
	var stalled []net.Conn
	for range api.MaxBodies {
		c, err := net.Dial("unix", g.Socket())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/messages HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", api.MaxBody)
		stalled = append(stalled, c)
	}
	ctx := testutil.Context(t, 30*time.Second)
	testutil.EventuallyWithin(t, 45*time.Second, "a send refused while the bodies stall", func() bool { // the gateway may take long to reach all 32 under CI load
		_, err := g.Send(ctx, api.SendBody{To: "nobody", Text: "hi"})
		var ae *api.APIError
		return errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests
	})
	if d := m.dropsOf("api", api.DropBodies); d == 0 {
		t.Errorf("no drop counted for %s", api.DropBodies)
	}
	for _, c := range stalled {
		c.Close()
	}
	testutil.Eventually(t, "a send served once they go", func() bool {
		_, err := g.Send(ctx, api.SendBody{To: "nobody", Text: "hi"})
		var ae *api.APIError
		return !errors.As(err, &ae) || ae.Status != http.StatusTooManyRequests
	})
}

// TestAClientThatNeverReadsStaysBounded: a client that opens its event
// stream and never reads it, and never calls wait_for_messages, is sent
// 600 messages of 2 KiB: the first mcpleg.InboxSize wait for it, each later
// one gets a dropped (queue-full) receipt, a legitimate MCP client is
// still served meanwhile, the gateway's goroutines stay flat, and closing
// the deaf session takes it out of the roster at once.
func TestAClientThatNeverReadsStaysBounded(t *testing.T) {
	g := gatewaytest.Start(t, gatewaytest.NewWorld(t), "gateway", "--legs", "claude")
	m := newMCP(t, g)
	deaf := m.open("deaf", true).session
	// Ask for pushes (a log notification per message), then hold the
	// stream they go to without reading it.
	m.post(deaf, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`, "")
	stream, err := net.Dial("unix", g.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	fmt.Fprintf(stream, "GET /mcp HTTP/1.1\r\nHost: gateway\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", deaf)
	g.WaitListed(t, "deaf")
	base := m.sample()

	const n = 600
	text := strings.Repeat("z", 2048)
	ctx := testutil.Context(t, 60*time.Second)
	ids := make([]string, 0, n)
	for i := range n {
		out, err := g.Send(ctx, api.SendBody{To: "deaf", Text: fmt.Sprintf("%d %s", i, text)})
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		ids = append(ids, out.Message.ID)
	}
	during := m.sample()
	// A legitimate client is served while the deaf one's stream is stuck.
	legit := m.open("legit", true).session
	if a := m.post(legit, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_sessions","arguments":{"protocol":"mcp"}}}`, ""); a.errMsg != "" || !strings.Contains(a.raw, "deaf") {
		t.Fatalf("list_sessions meanwhile: %d %s", a.status, a.raw)
	}
	count := map[message.Status]int{}
	for i, id := range ids {
		var st message.Status
		testutil.Eventually(t, "a receipt for "+id, func() bool {
			out, err := g.Message(ctx, id)
			st = out.Status
			return err == nil && (i < mcpleg.InboxSize || st.Final())
		})
		count[st]++
		if i >= mcpleg.InboxSize && st != message.StatusDropped {
			t.Errorf("message %d past the inbox: %v", i, st)
		}
	}
	if count[message.StatusDropped] != n-mcpleg.InboxSize {
		t.Errorf("statuses %v: want %d dropped", count, n-mcpleg.InboxSize)
	}
	if d := during.goroutines - base.goroutines; d > 10 {
		t.Errorf("goroutines grew by %v while a deaf client was flooded", d)
	}
	// DELETE takes it out of the roster at once, though closing its
	// session waits up to mcp.WriteStall for the stuck stream's write.
	start := time.Now()
	deleted := make(chan struct{})
	go func() { defer close(deleted); m.del(deaf) }()
	// Well before WriteStall, which is what waiting for the write would
	// take; not a timing claim, so it leaves a loaded machine room.
	testutil.EventuallyWithin(t, mcp.WriteStall/2, "deaf out of the roster", func() bool {
		_, ok := gatewaytest.FindSession(g.Listed(t), "deaf")
		return !ok
	})
	left := time.Since(start)
	select {
	case <-deleted:
	case <-time.After(mcp.WriteStall + 10*time.Second):
		t.Fatalf("DELETE of a session whose stream is stuck still waits after %v", time.Since(start))
	}
	t.Logf("%d messages to a client that never reads: %v; goroutines %v -> %v; heap in use %s -> %s; left the roster %v after DELETE, which answered after %v",
		n, count, base.goroutines, during.goroutines, MiB(int64(base.heap)), MiB(int64(during.heap)), left.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// TestADisconnectingStdioClientLeavesTheRosterAtOnce: a `gateway mcp`
// bridge connection (the control socket upgraded to MCP lines) that
// vanishes in the middle of a blocked wait_for_messages takes its session
// out of the roster at once, and a message to it then is answered with a
// receipt saying it disconnected.
func TestADisconnectingStdioClientLeavesTheRosterAtOnce(t *testing.T) {
	g := gatewaytest.Start(t, gatewaytest.NewWorld(t), "gateway", "--legs", "claude")
	m := newMCP(t, g)
	base := m.sample()
	c, err := net.Dial("unix", g.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /mcp?name=vanisher HTTP/1.1\r\nHost: gateway\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", mcp.UpgradeProtocol)
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	fmt.Fprintf(c, "%s\n", mcpInit)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	fmt.Fprintf(c, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait_for_messages","arguments":{"timeout_seconds":1e300}}}`+"\n")
	g.WaitListed(t, "vanisher")
	time.Sleep(100 * time.Millisecond) // the wait is blocked in the gateway
	start := time.Now()
	c.Close()
	testutil.EventuallyWithin(t, mcp.WriteStall/2, "vanisher out of the roster", func() bool {
		_, ok := gatewaytest.FindSession(g.Listed(t), "vanisher")
		return !ok
	})
	left := time.Since(start)
	ctx := testutil.Context(t, 30*time.Second)
	out, err := g.Send(ctx, api.SendBody{To: "vanisher", Text: "are you there?"})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "a final receipt", func() bool {
		o, err := g.Message(ctx, out.Message.ID)
		out = o
		return err == nil && o.Status.Final()
	})
	if rc := gatewaytest.LastReceipt(t, out); out.Status != message.StatusFailed || !strings.Contains(rc.Reason, "disconnected") {
		t.Errorf("a message to the vanished client: %v %+v", out.Status, rc)
	}
	after := m.settle(base, 5)
	t.Logf("left the roster %v after its connection closed; goroutines %v -> %v", left.Round(time.Millisecond), base.goroutines, after.goroutines)
	if after.goroutines > base.goroutines+5 {
		t.Errorf("goroutines %v -> %v after the client left", base.goroutines, after.goroutines)
	}
}
