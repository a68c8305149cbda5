package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/leg/remote/wire"
)

// Every goroutine a Stream starts is stopped by the time Run returns.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	token = "tok-stream"
	org   = "org-stream"
	// patience bounds a wait for something that must happen; reaching it
	// is a failure, never a measurement.
	patience = 15 * time.Second
)

var transports = []stream.Transport{stream.TransportWS, stream.TransportSSE}

// headers are the credentials and anthropic-* headers every request
// carries (docs/protocols/claude-ai-remote.md#request-headers).
func headers() http.Header {
	return http.Header{
		"Authorization":       {"Bearer " + token},
		"Anthropic-Version":   {"2023-06-01"},
		"Anthropic-Beta":      {"ccr-byoc-2025-07-29"},
		"X-Organization-Uuid": {org},
	}
}

// cloud is a fake claude.ai with one session, and an HTTP client whose idle
// connections are closed when the test ends.
type cloud struct {
	*fakecloud.Server
	t   testing.TB
	sid string
	hc  *http.Client
}

func newCloud(t testing.TB, opts fakecloud.Options) *cloud {
	t.Helper()
	opts.Token, opts.OrgUUID = token, org
	srv := fakecloud.Start(t, opts)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &cloud{Server: srv, t: t, sid: srv.CreateSession("stream test"), hc: &http.Client{Transport: tr}}
}

// config is a stream of the cloud's session with test-sized backoff.
func (c *cloud) config(tr stream.Transport) stream.Config {
	cfg := stream.NewConfig(c.URL(), org, c.sid)
	cfg.Transport = tr
	cfg.Header = func(context.Context) (http.Header, error) { return headers(), nil }
	cfg.HTTPClient = c.hc
	cfg.History = &restHistory{base: c.URL(), hc: c.hc}
	cfg.Backoff = clock.Backoff{Initial: time.Millisecond, Max: time.Millisecond}
	cfg.Logger = slog.New(slog.NewTextHandler(testLog{c.t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return cfg
}

// testLog writes the stream's log into the test's.
type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Helper()
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// streamPath is where a transport's live connection goes, for FailSpec.
func (c *cloud) streamPath(tr stream.Transport) string {
	if tr == stream.TransportSSE {
		return "/v1/code/sessions/" + c.sid + "/events/stream"
	}
	return "/v1/sessions/ws/" + c.sid + "/subscribe"
}

// emit pushes a message to the session.
func (c *cloud) emit(t testing.TB, line string) {
	t.Helper()
	if err := c.Emit(c.sid, line); err != nil {
		t.Fatalf("emit %s: %v", line, err)
	}
}

func assistant(uuid, text string) string {
	return fmt.Sprintf(`{"type":"assistant","uuid":%q,"message":{"id":"msg_%s","role":"assistant","content":[{"type":"text","text":%q}],"stop_reason":null}}`, uuid, uuid, text)
}

func canUseTool(requestID string) string {
	return fmt.Sprintf(`{"type":"control_request","request_id":%q,"request":{"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":"toolu_%s","input":{"command":"ls"}}}`, requestID, requestID)
}

// stored returns the uuids of every event the session holds, in order.
func (c *cloud) stored(t testing.TB) []string {
	t.Helper()
	h := &restHistory{base: c.URL(), hc: c.hc}
	var ids []string
	after := ""
	for {
		evs, more, err := h.EventsAfter(context.Background(), c.sid, after)
		if err != nil {
			t.Fatalf("listing events: %v", err)
		}
		for _, e := range evs {
			var v struct {
				UUID string `json:"uuid"`
			}
			json.Unmarshal(e, &v)
			ids = append(ids, v.UUID)
			after = v.UUID
		}
		if !more || len(evs) == 0 {
			return ids
		}
	}
}

// streamRequests returns the query strings and Last-Event-ID headers of the
// live connections the fake saw, in order.
func (c *cloud) streamRequests(tr stream.Transport) (queries, lastIDs []string) {
	for _, r := range c.Requests() {
		if r.Path == c.streamPath(tr) {
			queries = append(queries, r.RawQuery)
			lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
		}
	}
	return queries, lastIDs
}

// restHistory is History over plain GETs to the fake's REST endpoints.
type restHistory struct {
	base  string
	hc    *http.Client
	calls atomic.Int64
}

func (h *restHistory) get(ctx context.Context, u string) ([]json.RawMessage, bool, error) {
	h.calls.Add(1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, false, err
	}
	req.Header = headers()
	resp, err := h.hc.Do(req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, false, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, false, fmt.Errorf("GET %s: %s: %s", u, resp.Status, body)
	}
	var p struct {
		Data    []json.RawMessage `json:"data"`
		HasMore bool              `json:"has_more"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, false, err
	}
	return p.Data, p.HasMore, nil
}

func (h *restHistory) EventsAfter(ctx context.Context, sid, after string) ([]json.RawMessage, bool, error) {
	u := h.base + "/v1/sessions/" + url.PathEscape(sid) + "/events"
	if after != "" {
		u += "?after_id=" + url.QueryEscape(after)
	}
	return h.get(ctx, u)
}

func (h *restHistory) CodeEventsAfter(ctx context.Context, sid string, after uint64) ([]json.RawMessage, bool, error) {
	return h.get(ctx, fmt.Sprintf("%s/v1/code/sessions/%s/events?from_sequence_num=%d", h.base, url.PathEscape(sid), after))
}

// running is a Stream's Run in a goroutine, stopped when the test ends.
type running struct {
	t       testing.TB
	s       *stream.Stream
	updates chan stream.Update
	links   chan stream.Link
	done    chan error
	cancel  context.CancelFunc
	// onLink, if set before start, also sees every link change, on the
	// Run goroutine.
	onLink func(stream.Link)
	// stash holds updates read while waiting for something else: a stream
	// blocked on delivery cannot change its link.
	stash []stream.Update
}

func newRunning(t testing.TB, cfg stream.Config) *running {
	t.Helper()
	s, err := stream.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &running{t: t, s: s, updates: make(chan stream.Update), links: make(chan stream.Link, 1024), done: make(chan error, 1)}
}

func (r *running) start() *running {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		r.done <- r.s.Run(ctx, r.updates, func(l stream.Link) {
			if r.onLink != nil {
				r.onLink(l)
			}
			select {
			case r.links <- l:
			default:
				panic("test link buffer full")
			}
		})
	}()
	r.t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(patience):
			r.t.Errorf("Run did not return after its context ended")
		}
	})
	return r
}

// startStream runs a stream of cfg until the test ends.
func startStream(t testing.TB, cfg stream.Config) *running { return newRunning(t, cfg).start() }

// next returns the next update.
func (r *running) next() stream.Update {
	r.t.Helper()
	if len(r.stash) > 0 {
		u := r.stash[0]
		r.stash = r.stash[1:]
		return u
	}
	select {
	case u := <-r.updates:
		return u
	case err := <-r.done:
		r.done <- err
		r.t.Fatalf("Run returned %v while an update was expected", err)
	case <-time.After(patience):
		r.t.Fatalf("no update within %v", patience)
	}
	return stream.Update{}
}

// nextEvent returns the next update that carries a stored event, skipping
// the answers to initialize and the prompts they list.
func (r *running) nextEvent() stream.Update {
	r.t.Helper()
	for {
		u := r.next()
		if u.Message.Kind != wire.KindControlResponse && u.Source != stream.SourcePending {
			return u
		}
	}
}

// link waits for a link change to state, returning it.
func (r *running) link(state stream.LinkState) stream.Link {
	r.t.Helper()
	deadline := time.After(patience)
	for {
		select {
		case l := <-r.links:
			if l.State == state {
				return l
			}
		case u := <-r.updates:
			r.stash = append(r.stash, u)
		case <-deadline:
			r.t.Fatalf("no link change to %v within %v", state, patience)
		}
	}
}

// result waits for Run to return, stashing what it delivers meanwhile.
func (r *running) result() error {
	r.t.Helper()
	deadline := time.After(patience)
	for {
		select {
		case u := <-r.updates:
			r.stash = append(r.stash, u)
			continue
		case err := <-r.done:
			r.done <- err
			return err
		case <-deadline:
			r.t.Fatalf("Run did not return within %v", patience)
		}
	}
}

// collect reads stored events until it has every uuid in want, failing on a
// duplicate or on one out of order; it returns the updates read.
func (r *running) collect(want []string) []stream.Update {
	r.t.Helper()
	var got []stream.Update
	for len(got) < len(want) {
		u := r.nextEvent()
		i := len(got)
		if u.EventID != want[i] {
			r.t.Fatalf("event %d is %s (%s, %v), want %s; so far %v", i, u.EventID, u.Message.Type, u.Source, want[i], ids(got))
		}
		got = append(got, u)
	}
	return got
}

// sentinel emits one more event and checks it is the next one delivered:
// nothing was delivered twice in between.
func (r *running) sentinel(c *cloud, uuid string) {
	r.t.Helper()
	c.emit(r.t, assistant(uuid, "sentinel"))
	if u := r.nextEvent(); u.EventID != uuid {
		r.t.Fatalf("after the last event came %s (%s, %v), want the sentinel %s", u.EventID, u.Message.Type, u.Source, uuid)
	}
}

func ids(us []stream.Update) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.EventID
	}
	return out
}

func TestNewStreamValidatesTheConfig(t *testing.T) {
	good := stream.NewConfig("http://127.0.0.1:1", "org", "session_1")
	tests := []struct {
		name string
		edit func(c *stream.Config)
		ok   bool
	}{
		{"a config from NewConfig is valid", func(*stream.Config) {}, true},
		{"a zero transport means the WebSocket", func(c *stream.Config) { c.Transport = "" }, true},
		{"the event stream needs no organisation in the URL", func(c *stream.Config) { c.Transport, c.OrgUUID = stream.TransportSSE, "" }, true},
		{"zero durations take their defaults", func(c *stream.Config) { *c = stream.Config{BaseURL: c.BaseURL, OrgUUID: "o", SessionID: "s"} }, true},
		{"an https base URL is valid", func(c *stream.Config) { c.BaseURL = "https://claude.ai" }, true},
		{"a base URL without a scheme is refused", func(c *stream.Config) { c.BaseURL = "claude.ai" }, false},
		{"a ws base URL is refused, the stream derives it", func(c *stream.Config) { c.BaseURL = "ws://127.0.0.1:1" }, false},
		{"an empty session id is refused", func(c *stream.Config) { c.SessionID = "" }, false},
		{"the WebSocket needs an organisation", func(c *stream.Config) { c.OrgUUID = "" }, false},
		{"an unknown transport is refused", func(c *stream.Config) { c.Transport = "smoke" }, false},
		{"a negative open timeout is refused", func(c *stream.Config) { c.OpenTimeout = -1 }, false},
		{"a negative dedup window is refused", func(c *stream.Config) { c.DedupWindow = -1 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			tt.edit(&c)
			_, err := stream.New(c)
			if tt.ok && err != nil {
				t.Fatalf("New: %v", err)
			}
			if !tt.ok && !errors.Is(err, stream.ErrConfig) {
				t.Fatalf("New = %v, want ErrConfig", err)
			}
		})
	}
}

func TestStringsAreTheWireSpellings(t *testing.T) {
	tests := []struct {
		name string
		got  fmt.Stringer
		want string
	}{
		{"a connected link says connected", stream.LinkConnected, "connected"},
		{"a reconnecting link says reconnecting", stream.LinkReconnecting, "reconnecting"},
		{"a dormant link says dormant", stream.LinkDormant, "dormant"},
		{"a link that gave up says gave_up, as message.Link does", stream.LinkGaveUp, "gave_up"},
		{"a live update says live", stream.SourceLive, "live"},
		{"a replayed update says replay", stream.SourceReplay, "replay"},
		{"a recovered update says recovered", stream.SourceRecovered, "recovered"},
		{"a pending prompt says pending", stream.SourcePending, "pending"},
		{"a stall says stalled", stream.CauseStalled, "stalled"},
		{"an HTTP error says http-status", stream.CauseStatus, "http-status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.got.String(); got != tt.want {
				t.Fatalf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRunIsRefusedWhileRunning(t *testing.T) {
	c := newCloud(t, fakecloud.Options{})
	r := startStream(t, c.config(stream.TransportWS))
	r.link(stream.LinkConnected)
	err := r.s.Run(context.Background(), make(chan stream.Update), nil)
	if !errors.Is(err, stream.ErrRunning) {
		t.Fatalf("second Run = %v, want ErrRunning", err)
	}
}

func TestRunReturnsNilWhenItsContextEndsAndLeavesNoGoroutine(t *testing.T) {
	for _, tr := range transports {
		t.Run(string(tr)+" stops its reader, keep-alive and timers", func(t *testing.T) {
			c := newCloud(t, fakecloud.Options{})
			before := goleak.IgnoreCurrent()
			cfg := c.config(tr)
			cfg.KeepAlive = time.Millisecond // a keep-alive writer busy at the end
			r := startStream(t, cfg)
			r.link(stream.LinkConnected)
			c.emit(t, assistant("evt_1", "hi"))
			r.collect([]string{"evt_1"})
			r.cancel()
			if err := r.result(); err != nil {
				t.Fatalf("Run = %v, want nil", err)
			}
			c.hc.CloseIdleConnections()
			goleak.VerifyNone(t, before)
		})
	}
}

// An open stream holds one goroutine, the one running it: it reads,
// decodes and delivers itself, and ten thousand idle streams hold ten
// thousand stacks, not twice that.
func TestAnOpenStreamHoldsOneGoroutine(t *testing.T) {
	for _, tr := range transports {
		t.Run(string(tr), func(t *testing.T) {
			c := newCloud(t, fakecloud.Options{})
			r := startStream(t, c.config(tr))
			r.link(stream.LinkConnected)
			c.emit(t, assistant("evt_1", "hello"))
			r.collect([]string{"evt_1"})
			testutil.EventuallyWithin(t, patience, "one goroutine in the stream package", func() bool {
				return streamGoroutines() == 1
			})
		})
	}
}

// streamGoroutines counts the goroutines with a frame of package stream.
func streamGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "gateway/leg/remote/stream.(") {
			count++
		}
	}
	return count
}
