package sessionsapi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"golang.org/x/oauth2"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/leg/remote/sessionsapi"
	"github.com/sessiongateway/gateway/leg/remote/stream"
)

// The live stream's gap recovery and dial headers are served by a Client;
// these fail to compile if the two drift apart.
var (
	_ stream.History = (*sessionsapi.Client)(nil)
	_                = stream.Config{Header: (*sessionsapi.Client)(nil).StreamHeader}
)

const (
	testToken = "sk-ant-oat01-test-token-0123456789"
	testOrg   = "org-0000-1111"
)

// fakeClock records every wait and returns at once; Now advances by the
// waits, so MaxElapsed is measured in the waits asked for.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	sleeps  []time.Duration
	onSleep func() // called inside a wait, e.g. to cancel the caller
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc records the wait and fires at once (after the hook, which may
// cancel the caller first).
func (c *fakeClock) AfterFunc(d time.Duration, f func()) clock.Stopper {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	hook := c.onSleep
	c.mu.Unlock()
	if hook != nil {
		hook()
	}
	f()
	return time.NewTimer(0)
}

func (c *fakeClock) waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// tripper sits between the client and the fake: it records request bodies
// and can fail an attempt before sending it (a refused dial) or after (the
// answer is lost on the way back).
type tripper struct {
	next http.RoundTripper

	mu     sync.Mutex
	n      int
	bodies []string
	// fail, if set, is asked about attempt n (from 1): dial refuses the
	// connection without sending; lose sends and then drops the answer.
	fail func(n int, r *http.Request) (dial, lose bool)
}

func (tr *tripper) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	tr.mu.Lock()
	tr.n++
	n := tr.n
	fail := tr.fail
	tr.mu.Unlock()
	var dial, lose bool
	if fail != nil {
		dial, lose = fail(n, r)
	}
	if dial {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	tr.mu.Lock()
	tr.bodies = append(tr.bodies, string(body))
	tr.mu.Unlock()
	resp, err := tr.next.RoundTrip(r)
	if err == nil && lose {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, io.ErrUnexpectedEOF
	}
	return resp, err
}

func (tr *tripper) sent() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.bodies...)
}

type env struct {
	srv   *fakecloud.Server
	c     *sessionsapi.Client
	clock *fakeClock
	trip  *tripper
}

// setup starts a fake with fo and a client for it with o: by default a
// static bearer token, the org, the W3C propagator and a fake clock.
func setup(t *testing.T, fo fakecloud.Options, o sessionsapi.Options) env {
	t.Helper()
	if fo.Token == "" && fo.SessionKey == "" && fo.RefreshToken == "" {
		fo.Token = testToken
	}
	if fo.OrgUUID == "" {
		fo.OrgUUID = testOrg
	}
	srv := fakecloud.Start(t, fo)
	e := env{srv: srv, clock: newFakeClock(), trip: &tripper{next: http.DefaultTransport}}
	o.BaseURL = srv.URL()
	if o.OrgUUID == "" {
		o.OrgUUID = fo.OrgUUID
	}
	if o.Token == nil && o.SessionKey == "" {
		o.Token = auth.StaticToken(testToken)
	}
	if o.Propagator == nil {
		o.Propagator = propagation.TraceContext{}
	}
	if o.Clock == nil {
		o.Clock = e.clock
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Transport: e.trip}
	}
	c, err := sessionsapi.New(o)
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	return e
}

// requests returns the fake's log of requests whose path starts with prefix.
func (e env) requests(prefix string) []fakecloud.Request {
	var out []fakecloud.Request
	for _, r := range e.srv.Requests() {
		if strings.HasPrefix(r.Path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

func wantErr(t *testing.T, err error, targets ...error) {
	t.Helper()
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Fatalf("got error %v, want %v", err, target)
		}
	}
}

func field(t *testing.T, raw json.RawMessage, name string) string {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	var s string
	json.Unmarshal(obj[name], &s)
	return s
}

// sentEvents decodes the events of a recorded post body.
func sentEvents(t *testing.T, body string) []json.RawMessage {
	t.Helper()
	var b struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	return b.Events
}

// refusing is a token source that always refreshes to a new token, which
// the server may still refuse.
type refusing struct {
	mu sync.Mutex
	n  int
}

func (r *refusing) Token() (*oauth2.Token, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &oauth2.Token{AccessToken: "tok-" + string(rune('a'+r.n))}, nil
}

func (r *refusing) Invalidate(*oauth2.Token) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	return true
}
