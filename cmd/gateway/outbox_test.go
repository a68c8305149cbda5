package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/outbox"
	"github.com/sessiongateway/gateway/leg/remote"
	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// postMode is what the proxy does with a post of events.
type postMode uint8

const (
	postPass   postMode = iota // pass it on and answer
	postRefuse                 // answer 503 without passing it on
	postHold                   // pass it on (the fake stores it) but keep the answer back
)

// seenPost is one user event in a post the proxy saw.
type seenPost struct{ uuid, text string }

// cloudProxy stands between a gateway and the fake claude.ai: it records
// every user event posted, failed attempts included (the fake logs
// requests without bodies), and can refuse posts or keep their answers
// back, as a crash between the server's acceptance and our hearing of it
// needs.
type cloudProxy struct {
	url      string
	upstream *url.URL

	mu      sync.Mutex
	mode    postMode
	release chan struct{} // closed: held answers go out
	posts   []seenPost
}

func newCloudProxy(t *testing.T, upstream string) *cloudProxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &cloudProxy{upstream: u, release: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/events") {
			p.post(w, r, rp)
			return
		}
		rp.ServeHTTP(w, r) // REST, the WebSocket and the SSE stream as they are
	}))
	t.Cleanup(func() {
		p.setMode(postPass)
		srv.Close()
	})
	p.url = srv.URL
	return p
}

// setMode changes what later posts meet; leaving postHold lets the held
// answers go.
func (p *cloudProxy) setMode(m postMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == postHold && m != postHold {
		close(p.release)
		p.release = make(chan struct{})
	}
	p.mode = m
}

func (p *cloudProxy) post(w http.ResponseWriter, r *http.Request, rp *httputil.ReverseProxy) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var in struct{ Events []json.RawMessage }
	_ = json.Unmarshal(body, &in)
	p.mu.Lock()
	for _, raw := range in.Events {
		if m, err := wire.Decode(raw); err == nil && m.Kind == wire.KindUser {
			p.posts = append(p.posts, seenPost{uuid: m.UUID, text: m.User.Content.Text()})
		}
	}
	mode, release := p.mode, p.release
	p.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	switch mode {
	case postRefuse:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"refused by the test proxy"}}`)
	case postHold:
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r)
		select {
		case <-release:
		case <-r.Context().Done():
			return // the gateway is gone: its answer with it
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	default:
		rp.ServeHTTP(w, r)
	}
}

func (p *cloudProxy) seen() []seenPost {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.posts)
}

func (p *cloudProxy) saw(text string) bool {
	return slices.ContainsFunc(p.seen(), func(s seenPost) bool { return s.text == text })
}

// outboxCloud is a fake claude.ai with one session, behind a proxy, and a
// token file for it.
type outboxCloud struct {
	cloud     *fakecloud.Server
	proxy     *cloudProxy
	sid       string
	tokenFile string
}

func newOutboxCloud(t *testing.T) *outboxCloud {
	t.Helper()
	cloud := fakecloud.Start(t, fakecloud.Options{Token: e2eToken, OrgUUID: e2eOrg})
	c := &outboxCloud{cloud: cloud, proxy: newCloudProxy(t, cloud.URL()), sid: cloud.CreateSession("outbox target"),
		tokenFile: filepath.Join(t.TempDir(), "token")}
	if err := os.WriteFile(c.tokenFile, []byte(e2eToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// users are the user events the fake stored, in order.
func (c *outboxCloud) users() []fakecloud.Message {
	var out []fakecloud.Message
	for _, m := range c.cloud.Posted(c.sid) {
		if m.Type == "user" {
			out = append(out, m)
		}
	}
	return out
}

// accepted says a send's answer took the message: queued in the outbox,
// or already further (the server's echo can come before the API answers).
func accepted(s message.Status) bool {
	return s == message.StatusQueued || s == message.StatusSent || s == message.StatusDelivered
}

func outboxJSON(t *testing.T, stateDir string, args ...string) []message.OutboxItem {
	t.Helper()
	out, errOut, code := runCLI(t, stateDir, append([]string{"outbox", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("outbox --json: exit %d: %s", code, errOut)
	}
	var items []message.OutboxItem
	if err := json.Unmarshal([]byte(out), &items); err != nil {
		t.Fatalf("outbox --json printed %q: %v", out, err)
	}
	return items
}

func TestOutboxCommand(t *testing.T) {
	c := newOutboxCloud(t)
	c.proxy.setMode(postHold)
	g := startBinary(t, t.TempDir(), "--legs", "none", "--bridge=false", "--remote-url", c.proxy.url, "--remote-org", e2eOrg,
		"--remote-token-file", c.tokenFile, "--remote-follow", c.sid, "--remote-transport", "ws")
	if fi, err := os.Lstat(filepath.Join(g.StateDir, outbox.FileName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("outbox file: %v %v, want a 0600 file in the state directory", fi, err)
	}
	out, err := g.Send(context.Background(), api.SendBody{To: "bridge:" + c.sid, Text: "held\tby the proxy"})
	if err != nil || !accepted(out.Status) {
		t.Fatalf("send: %+v %v, want it accepted", out, err)
	}
	id := out.Message.ID
	testutil.EventuallyWithin(t, 10*time.Second, "the post reached the server", func() bool { return c.proxy.saw("held\tby the proxy") })

	t.Run("a message the server has not acknowledged is listed pending", func(t *testing.T) {
		items := outboxJSON(t, g.StateDir)
		if len(items) != 1 || items[0].ID != id || items[0].State != message.OutboxPending ||
			items[0].To != "bridge:"+c.sid || items[0].EventUUID != remote.EventUUID(id) || items[0].Preview != "held by the proxy" {
			t.Fatalf("listed %+v", items)
		}
		table, _, code := runCLI(t, g.StateDir, "outbox")
		if code != 0 || !regexp.MustCompile(`(?m)^ID\s+STATE\s+TRIES\s+TO\s+ACCEPTED\s+NEXT TRY\s+LAST ERROR\s+BODY$`).MatchString(table) ||
			!regexp.MustCompile(`(?m)^`+id+`\s+pending\s+0\s+bridge:`+c.sid+`\s+\d+s ago\s+now\s+-\s+held by the proxy$`).MatchString(table) {
			t.Fatalf("table (exit %d):\n%s", code, table)
		}
	})
	c.proxy.setMode(postPass)
	t.Run("once the server answers it is no longer pending, and --all shows it acked", func(t *testing.T) {
		testutil.EventuallyWithin(t, 10*time.Second, "the outbox is empty", func() bool { return len(outboxJSON(t, g.StateDir)) == 0 })
		items := outboxJSON(t, g.StateDir, "--all")
		if len(items) != 1 || items[0].State != message.OutboxAcked || items[0].Attempts != 1 || items[0].FinishedAt.IsZero() {
			t.Fatalf("listed %+v", items)
		}
	})
	t.Run("the command takes no arguments", func(t *testing.T) {
		if _, errOut, code := runCLI(t, g.StateDir, "outbox", "extra"); code != exitUsage || !strings.Contains(errOut, "usage: gateway outbox") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
	t.Run("without a gateway it says none is reachable", func(t *testing.T) {
		if _, errOut, code := runCLI(t, t.TempDir(), "outbox"); code != exitError || !strings.Contains(errOut, "gateway not reachable") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
}

// TestAcceptedMessagesSurviveKill9 kills the gateway between the API's
// acceptance of messages for a remote session and the server's
// acknowledgement, restarts it on the same state directory, and checks
// that every accepted message reached the server exactly once, under the
// event uuid of its first attempt.
func TestAcceptedMessagesSurviveKill9(t *testing.T) {
	const n = 8
	tests := []struct {
		name string
		mode postMode
		// dupes is whether the server saw a retry of a post it had stored.
		dupes bool
	}{
		{"when the server refused every post before the crash", postRefuse, false},
		{"when the server stored a post but its answer was lost in the crash", postHold, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newOutboxCloud(t)
			c.proxy.setMode(tt.mode)
			root := t.TempDir()
			stateDir := filepath.Join(root, "state")
			args := []string{"--legs", "remote", "--remote-url", c.proxy.url, "--remote-org", e2eOrg,
				"--remote-token-file", c.tokenFile, "--remote-follow", c.sid, "--state-dir", stateDir}
			child := startBinary(t, root, args...)
			client := api.NewUnixClient(filepath.Join(stateDir, "gateway.sock"))
			ready := func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_, err := client.Sessions(ctx)
				return err == nil
			}
			testutil.EventuallyWithin(t, 20*time.Second, "the gateway answers", ready)

			ids := make([]string, n)
			bodies := make([]string, n)
			for i := range n {
				bodies[i] = fmt.Sprintf("durable message %d", i)
				out, err := client.Send(context.Background(), api.SendBody{To: "bridge:" + c.sid, Text: bodies[i]})
				if err != nil || !accepted(out.Status) {
					t.Fatalf("send %d: %+v %v, want it accepted", i, out, err)
				}
				ids[i] = out.Message.ID
			}
			testutil.EventuallyWithin(t, 20*time.Second, "the first message's first attempt reached the server", func() bool { return c.proxy.saw(bodies[0]) })
			if tt.mode == postHold {
				testutil.EventuallyWithin(t, 10*time.Second, "the server stored it", func() bool { return len(c.users()) == 1 })
			}
			if items := outboxJSON(t, stateDir); len(items) != n {
				t.Fatalf("before the crash %d messages are pending, want %d", len(items), n)
			}

			child.Kill(t) // SIGKILL: no cleanup of any kind
			c.proxy.setMode(postPass)
			startBinary(t, root, args...)
			testutil.EventuallyWithin(t, 20*time.Second, "the restarted gateway answers", ready)
			testutil.EventuallyWithin(t, 30*time.Second, "every message reached the server", func() bool { return len(c.users()) >= n })
			testutil.EventuallyWithin(t, 10*time.Second, "the outbox is empty", func() bool { return len(outboxJSON(t, stateDir)) == 0 })

			t.Run("the restarted gateway tracks the resumed messages again, so their receipts are heard", func(t *testing.T) {
				cl := api.NewUnixClient(filepath.Join(stateDir, "gateway.sock"))
				for _, id := range ids {
					var o router.Outbound
					testutil.EventuallyWithin(t, 10*time.Second, "a resumed message is sent", func() bool {
						var err error
						o, err = cl.Message(ctxT(t), id)
						return err == nil && (o.Status == message.StatusSent || o.Status == message.StatusDelivered)
					})
					if o.Message.ID != id {
						t.Fatalf("message %s = %+v", id, o)
					}
				}
			})
			t.Run("every accepted message is stored once, in order, under the uuid of its id", func(t *testing.T) {
				users := c.users()
				if len(users) != n {
					t.Fatalf("the server stored %d user events, want %d", len(users), n)
				}
				for i, u := range users {
					if u.User.Content.Text() != bodies[i] || u.UUID != remote.EventUUID(ids[i]) {
						t.Errorf("event %d is %q under %s, want %q under %s", i, u.User.Content.Text(), u.UUID, bodies[i], remote.EventUUID(ids[i]))
					}
				}
			})
			t.Run("every attempt, before and after the crash, carried that uuid", func(t *testing.T) {
				uuids := map[string]map[string]bool{}
				for _, p := range c.proxy.seen() {
					if uuids[p.text] == nil {
						uuids[p.text] = map[string]bool{}
					}
					uuids[p.text][p.uuid] = true
				}
				for i, b := range bodies {
					if len(uuids[b]) != 1 || !uuids[b][remote.EventUUID(ids[i])] {
						t.Errorf("%q was posted under %v, want only %s", b, uuids[b], remote.EventUUID(ids[i]))
					}
				}
				if len(uuids) != n {
					t.Errorf("%d different texts were posted, want %d", len(uuids), n)
				}
			})
			t.Run("a retry of a post the server had stored was a duplicate, not a second event", func(t *testing.T) {
				posts := 0
				for _, r := range c.cloud.Requests() {
					if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/events") {
						posts++
					}
				}
				dups := c.cloud.Duplicates(c.sid)
				if tt.dupes && (dups != 1 || posts != n+1) {
					t.Errorf("the server turned away %d duplicates in %d posts, want 1 in %d", dups, posts, n+1)
				}
				if !tt.dupes && (dups != 0 || posts != n) {
					t.Errorf("the server turned away %d duplicates in %d posts, want none in %d", dups, posts, n)
				}
			})
			t.Run("the outbox shows them all acknowledged", func(t *testing.T) {
				items := outboxJSON(t, stateDir, "--all")
				if len(items) != n {
					t.Fatalf("--all lists %d, want %d", len(items), n)
				}
				for i, it := range items {
					if it.ID != ids[i] || it.State != message.OutboxAcked || it.EventUUID != remote.EventUUID(ids[i]) {
						t.Errorf("item %d: %+v", i, it)
					}
				}
			})
		})
	}
}
