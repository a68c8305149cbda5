package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// receiver is a local webhook receiver or ntfy stand-in: it keeps each body,
// and answers the first fail requests with 503.
type receiver struct {
	mu     sync.Mutex
	bodies [][]byte
	sigs   []string
	hits   int
	fail   int
	check  func([]byte) error // a body it refuses with 400
	server *httptest.Server
}

func newReceiver(t *testing.T, fail int, check func([]byte) error) *receiver {
	rc := &receiver{fail: fail, check: check}
	rc.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.hits++
		if rc.hits <= rc.fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if rc.check != nil {
			if err := rc.check(b); err != nil {
				t.Errorf("the stand-in refused %s: %v", b, err)
				w.WriteHeader(http.StatusBadRequest)
				return
			}
		}
		rc.bodies = append(rc.bodies, b)
		rc.sigs = append(rc.sigs, r.Header.Get(SignatureHeader))
	}))
	t.Cleanup(rc.server.Close)
	return rc
}

func (rc *receiver) got() ([][]byte, []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([][]byte(nil), rc.bodies...), append([]string(nil), rc.sigs...)
}

// ntfyMessage is ntfy's documented JSON publish body (POST to the server
// root); the stand-in refuses any other field.
type ntfyMessage struct {
	Topic    string   `json:"topic"`
	Message  string   `json:"message"`
	Title    string   `json:"title"`
	Tags     []string `json:"tags"`
	Priority int      `json:"priority"`
	Click    string   `json:"click"`
	Markdown bool     `json:"markdown"`
	Actions  []struct {
		Action string `json:"action"`
		Label  string `json:"label"`
		URL    string `json:"url"`
		Clear  bool   `json:"clear"`
	} `json:"actions"`
}

func decodeNtfy(b []byte) (ntfyMessage, error) {
	var m ntfyMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, err
	}
	if m.Topic == "" || m.Priority < 1 || m.Priority > 5 || len(m.Actions) > 3 {
		return m, io.ErrUnexpectedEOF
	}
	for _, a := range m.Actions {
		if a.Action != "view" || a.Label == "" || !strings.HasPrefix(a.URL, "http") {
			return m, io.ErrUnexpectedEOF
		}
	}
	return m, nil
}

// world is a router with a prompt leg, its API on a loopback server (for the
// action links) and a notifier to targets.
type world struct {
	rt    *router.Router
	leg   *legtest.PromptLeg
	n     *Notifier
	api   *httptest.Server
	logs  *bytes.Buffer
	logMu *sync.Mutex
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func newWorld(t *testing.T, cfg Config) *world {
	t.Helper()
	leg := legtest.NewPromptLeg()
	rt := router.New(router.Config{}, leg)
	w := &world{rt: rt, leg: leg, logs: &bytes.Buffer{}, logMu: &sync.Mutex{}}
	cfg.Decider, cfg.Log = rt, slog.New(slog.NewTextHandler(lockedWriter{w.logMu, w.logs}, nil))
	if cfg.Backoff == (clock.Backoff{}) {
		cfg.Backoff = clock.Backoff{Initial: time.Millisecond, Max: time.Millisecond}
	}
	var base string
	cfg.BaseURL = "" // set from the API server below
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.n = n
	srv := api.NewServer(api.Config{Router: rt, Token: "tok", Actions: n.ActionHandler()})
	w.api = httptest.NewServer(nil)
	w.api.Config.Handler = srv.TCPHandler(w.api.Listener.Addr().String())
	base = w.api.URL
	n.cfg.BaseURL = base
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = rt.Run(ctx) })
	wg.Go(func() { n.Run(ctx, rt.Hub()) })
	t.Cleanup(func() { w.api.Close(); cancel(); wg.Wait() })
	<-leg.Started()
	return w
}

func (w *world) logged() string {
	w.logMu.Lock()
	defer w.logMu.Unlock()
	return w.logs.String()
}

func follow(t *testing.T, link string) (int, string) {
	t.Helper()
	res, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestAWebhookGetsOneSignedNotificationPerPrompt(t *testing.T) {
	secret := []byte("s3cret")
	hook := newReceiver(t, 2, nil) // two 503s first: delivered on the third try
	w := newWorld(t, Config{Targets: []string{hook.server.URL + "/hook"}, Secret: secret})
	w.leg.Raise(legtest.Prompt(legtest.SessionID, "r1", "Bash", `{"command":"make"}`))
	w.leg.Raise(legtest.Prompt(legtest.SessionID, "r2", "Edit", `{"file_path":"a.go"}`))
	w.leg.Raise(legtest.Prompt(legtest.SessionID, "r1", "Bash", `{"command":"make"}`)) // published again
	testutil.Eventually(t, "two notifications arrive", func() bool { b, _ := hook.got(); return len(b) >= 2 })
	time.Sleep(50 * time.Millisecond) // a duplicate would arrive by now
	bodies, sigs := hook.got()
	if len(bodies) != 2 {
		t.Fatalf("%d notifications for 2 prompts", len(bodies))
	}
	seen := map[string]bool{}
	for i, b := range bodies {
		m := hmac.New(sha256.New, secret)
		m.Write(b)
		if want := "sha256=" + hex.EncodeToString(m.Sum(nil)); sigs[i] != want {
			t.Errorf("signature %q, want %q", sigs[i], want)
		}
		var nt Notification
		if err := json.Unmarshal(b, &nt); err != nil || nt.Kind != KindPrompt || len(nt.Actions) != 2 {
			t.Fatalf("body %s", b)
		}
		seen[nt.ID] = true
	}
	if !seen[legtest.ShortID(legtest.SessionID, "r1")] || !seen[legtest.ShortID(legtest.SessionID, "r2")] {
		t.Errorf("notified %v", seen)
	}
	if c := w.n.Counts(); c["sent"] != 2 || c["failed"] != 0 {
		t.Errorf("counts %v", c)
	}
}

func TestNtfyButtonsAnswerThePromptOnce(t *testing.T) {
	stand := newReceiver(t, 0, func(b []byte) error { _, err := decodeNtfy(b); return err })
	target := "ntfy:" + stand.server.URL + "/gateway-alerts"
	w := newWorld(t, Config{Targets: []string{target}})
	w.leg.Raise(legtest.Prompt(legtest.SessionID, "r1", "Bash", `{"command":"make"}`))
	testutil.Eventually(t, "the stand-in gets the notification", func() bool { b, _ := stand.got(); return len(b) == 1 })
	bodies, _ := stand.got()
	m, _ := decodeNtfy(bodies[0])
	if m.Topic != "gateway-alerts" || m.Title != "Waiting for you: Bash" || len(m.Actions) != 2 || m.Actions[0].Label != "Allow" || m.Actions[1].Label != "Deny" {
		t.Fatalf("published %+v", m)
	}
	allow, deny := m.Actions[0].URL, m.Actions[1].URL
	id := legtest.ShortID(legtest.SessionID, "r1")

	t.Run("an altered link does nothing", func(t *testing.T) {
		tok := allow[strings.LastIndex(allow, "/")+1:]
		body, sig, _ := strings.Cut(tok, ".")
		flipped := []byte(body)
		flipped[len(flipped)/2] ^= 1
		for _, bad := range []string{string(flipped) + "." + sig, body + "." + sig[:len(sig)-2] + "AA", body, "x.y"} {
			if code, _ := follow(t, w.api.URL+"/v1/actions/"+bad); code != http.StatusForbidden {
				t.Errorf("an altered link: %d", code)
			}
		}
		if len(w.leg.Answers()) != 0 {
			t.Fatal("an altered link answered")
		}
	})
	t.Run("the allow button answers once and says so", func(t *testing.T) {
		code, text := follow(t, allow)
		if code != 200 || !strings.Contains(text, "allowed") {
			t.Fatalf("%d %s", code, text)
		}
		if code, text := follow(t, allow); code != http.StatusGone || !strings.Contains(text, "already used") {
			t.Fatalf("replayed: %d %s", code, text)
		}
		if code, text := follow(t, deny); code != http.StatusConflict {
			t.Fatalf("the other button after the answer: %d %s", code, text)
		}
		as := w.leg.Answers()
		if len(as) != 1 || as[0].Behavior != message.BehaviorAllow || as[0].By != "notification" {
			t.Fatalf("the leg got %+v", as)
		}
		if p, _ := w.rt.Permission(id); p.State != message.PermissionAnswered {
			t.Fatalf("prompt %+v", p)
		}
	})
	t.Run("logs never hold a link", func(t *testing.T) {
		if strings.Contains(w.logged(), "/v1/actions/") {
			t.Fatalf("logs: %s", w.logged())
		}
	})
}

func TestTheDenyButtonDeniesAChannelsPromptWithoutItsReason(t *testing.T) {
	stand := newReceiver(t, 0, func(b []byte) error { _, err := decodeNtfy(b); return err })
	w := newWorld(t, Config{Targets: []string{"ntfy:" + stand.server.URL + "/gateway-alerts"}})
	ev := legtest.Prompt(legtest.SessionID, "abcde", "Bash", `{"command":"make"}`)
	ev.Permission.Source = message.SourceChannel
	w.leg.Raise(ev)
	testutil.Eventually(t, "the stand-in gets the notification", func() bool { b, _ := stand.got(); return len(b) == 1 })
	bodies, _ := stand.got()
	m, _ := decodeNtfy(bodies[0])
	if code, text := follow(t, m.Actions[1].URL); code != 200 || !strings.Contains(text, "denied") {
		t.Fatalf("deny: %d %s", code, text)
	}
	as := w.leg.Answers()
	if len(as) != 1 || as[0].Behavior != message.BehaviorDeny || as[0].Message != "" {
		t.Fatalf("the leg got %+v", as)
	}
}

func TestAQuestionsOptionsAreButtons(t *testing.T) {
	stand := newReceiver(t, 0, func(b []byte) error { _, err := decodeNtfy(b); return err })
	w := newWorld(t, Config{Targets: []string{"ntfy:" + stand.server.URL + "/t"}})
	ev := legtest.Prompt(legtest.SessionID, "q1", "AskUserQuestion", `{"questions":[{"question":"Ship it?","multiSelect":false,"options":[{"label":"Yes"},{"label":"No"}]}]}`)
	ev.Permission.Questions = []message.Question{{Question: "Ship it?", Options: []string{"Yes", "No"}}}
	w.leg.Raise(ev)
	testutil.Eventually(t, "the stand-in gets the question", func() bool { b, _ := stand.got(); return len(b) == 1 })
	bodies, _ := stand.got()
	m, _ := decodeNtfy(bodies[0])
	if len(m.Actions) != 2 || m.Actions[0].Label != "Yes" || m.Message != "Ship it?" {
		t.Fatalf("published %+v", m)
	}
	if code, text := follow(t, m.Actions[1].URL); code != 200 || !strings.Contains(text, `"No"`) {
		t.Fatalf("%d %s", code, text)
	}
	as := w.leg.Answers()
	if len(as) != 1 || len(as[0].Answers["Ship it?"]) != 1 || as[0].Answers["Ship it?"][0] != "No" {
		t.Fatalf("the leg got %+v", as)
	}
}

func TestFailedDeliveriesAreCountedAndLoggedWithoutTheLink(t *testing.T) {
	down := newReceiver(t, 1000, nil)
	w := newWorld(t, Config{Targets: []string{down.server.URL + "/hook?key=private"}})
	w.leg.Raise(legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`))
	testutil.Eventually(t, "the delivery fails", func() bool { return w.n.Counts()["failed"] == 1 })
	down.mu.Lock()
	hits := down.hits
	down.mu.Unlock()
	if hits != maxAttempts {
		t.Errorf("%d attempts, want %d", hits, maxAttempts)
	}
	if l := w.logged(); !strings.Contains(l, "notification not delivered") || strings.Contains(l, "private") || strings.Contains(l, "/v1/actions/") {
		t.Fatalf("logs: %s", l)
	}
}

func TestARedirectIsAFailedDeliveryNeverFollowed(t *testing.T) {
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			elsewhere := newReceiver(t, 0, nil)
			var mu sync.Mutex
			hits := 0
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				hits++
				mu.Unlock()
				http.Redirect(w, r, elsewhere.server.URL+"/stolen", code)
			}))
			t.Cleanup(hook.Close)
			w := newWorld(t, Config{Targets: []string{hook.URL + "/hook"}, Secret: []byte("s3cret")})
			w.leg.Raise(legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`))
			testutil.Eventually(t, "the delivery fails", func() bool { return w.n.Counts()["failed"] == 1 })
			mu.Lock()
			defer mu.Unlock()
			if b, _ := elsewhere.got(); len(b) != 0 || hits != 1 {
				t.Fatalf("the redirect's target got %d bodies; the hook %d tries, want 1", len(b), hits)
			}
			if l := w.logged(); !strings.Contains(l, strconv.Itoa(code)) || !strings.Contains(l, "redirects are not followed") {
				t.Fatalf("logs: %s", l)
			}
		})
	}
}

func TestAFullQueueDropsAndCountsWithoutBlocking(t *testing.T) {
	n, err := New(Config{Targets: []string{"http://127.0.0.1:9/hook", "http://127.0.0.2:9/hook"}})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing delivers: the queues fill, and then each notification is dropped at once, for each target.
	for i := range queueSize + 10 {
		ev := legtest.Prompt(legtest.SessionID, "r", "Bash", `{}`)
		ev.Permission.ID = fmt.Sprintf("p%d", i)
		n.onEvent(ev)
	}
	if c := n.Counts(); c["dropped"] != 20 || n.drops[0].Load() != 10 || n.drops[1].Load() != 10 {
		t.Fatalf("counts %v, per target %d and %d; want 20, 10 each", c, n.drops[0].Load(), n.drops[1].Load())
	}
	again := legtest.Prompt(legtest.SessionID, "r", "Bash", `{}`)
	again.Permission.ID = "p0"
	n.onEvent(again)
	if c := n.Counts(); c["dropped"] != 20 {
		t.Fatalf("a prompt published again was queued again: %v", c)
	}
}

func TestATargetThatHangsDelaysNoOther(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) }) // runs first: the hanging handlers return
	ok := newReceiver(t, 0, nil)
	w := newWorld(t, Config{Targets: []string{hang.URL + "/hook", ok.server.URL + "/hook"}})
	w.leg.Raise(legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`))
	deadline := time.Now().Add(5 * time.Second) // the hanging target's one try takes 10 s
	for {
		if b, _ := ok.got(); len(b) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the healthy target got nothing while the other hung")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLinksExpireAndCannotBeForged(t *testing.T) {
	clk := &stepClock{now: time.Unix(1_800_000_000, 0)}
	l := NewLinks(nil, clk)
	tok := l.Token(Action{Kind: KindPrompt, ID: "p1", Verb: "allow"})
	other := NewLinks(nil, clk).Token(Action{Kind: KindPrompt, ID: "p1", Verb: "allow"})
	if _, err := l.Spend(other); err != ErrForged {
		t.Fatalf("another key's link: %v", err)
	}
	clk.now = clk.now.Add(LinkTTL)
	if _, err := l.Spend(tok); err != ErrExpired {
		t.Fatalf("expired: %v", err)
	}
}

func TestTargets(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		ok   bool
		ntfy string
	}{
		{"https://hooks.example/x", true, ""},
		{"ntfy://ntfy.sh/alerts", true, "https://ntfy.sh/ alerts"},
		{"https://ntfy.sh/alerts", true, "https://ntfy.sh/ alerts"},
		{"ntfy:http://127.0.0.1:8080/alerts", true, "http://127.0.0.1:8080/ alerts"},
		{"ntfy://ntfy.sh/", false, ""},
		{"ntfy://ntfy.sh/a/b", false, ""},
		{"ftp://x/y", false, ""},
		{"hooks.example/x", false, ""},
	} {
		got, err := ParseTarget(tt.raw)
		if (err == nil) != tt.ok || (tt.ntfy != "" && got.root+" "+got.tpc != tt.ntfy) {
			t.Errorf("%s: %+v %v", tt.raw, got, err)
		}
	}
}

type stepClock struct{ now time.Time }

func (c *stepClock) Now() time.Time                                { return c.now }
func (c *stepClock) AfterFunc(time.Duration, func()) clock.Stopper { return time.NewTimer(time.Hour) }

func FuzzLinkToken(f *testing.F) {
	l := NewLinks([]byte("k"), nil)
	f.Add(l.Token(Action{Kind: KindHeld, ID: "m1", Verb: "release"}))
	f.Add("x.y")
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		_, _ = l.Spend(tok) // never a panic
	})
}

func TestIdleAndTurnNotifyOnlyWhenAskedFor(t *testing.T) {
	turn := message.Event{Type: message.EventRemote, Remote: &message.RemoteEvent{Address: "bridge:s1", Kind: "result", UUID: "u1", Text: "done"}}
	idle := message.Event{Type: message.EventIdle, Idle: &message.IdleNotice{Peer: "uds:/x", State: "idle", SubID: "s1"}}
	for _, tt := range []struct {
		kinds []string
		want  int
	}{{nil, 0}, {[]string{KindTurn}, 1}, {[]string{KindIdle, KindTurn}, 2}} {
		n, err := New(Config{Targets: []string{"http://127.0.0.1:9/"}, Kinds: tt.kinds})
		if err != nil {
			t.Fatal(err)
		}
		n.onEvent(turn)
		n.onEvent(idle)
		if len(n.queues[0]) != tt.want {
			t.Errorf("--notify-on %v: %d notifications, want %d", tt.kinds, len(n.queues[0]), tt.want)
		}
	}
	if _, err := New(Config{Kinds: []string{"everything"}}); err == nil {
		t.Error("an unknown kind was accepted")
	}
}

func TestRunEndsWhenTheHubCloses(t *testing.T) {
	n, err := New(Config{Targets: []string{"http://127.0.0.1:9/"}})
	if err != nil {
		t.Fatal(err)
	}
	hub := router.NewHub(16, 16)
	done := make(chan struct{})
	go func() { n.Run(context.Background(), hub); close(done) }()
	hub.CloseAll(router.ErrShuttingDown)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end when the hub closed")
	}
}

func TestALocalSessionsPromptNamesItsSessionAndOffersAlwaysAllow(t *testing.T) {
	stand := newReceiver(t, 0, func(b []byte) error { _, err := decodeNtfy(b); return err })
	hook := newReceiver(t, 0, nil)
	w := newWorld(t, Config{Targets: []string{"ntfy:" + stand.server.URL + "/gateway-alerts", hook.server.URL}})
	ev := legtest.Prompt(legtest.SessionID, "r1", "Bash", `{"command":"make deploy"}`)
	ev.Permission.Source, ev.Permission.Name = message.SourceHook, "work-08"
	ev.Permission.Suggestions = []message.PermissionUpdate{{Type: "addRules", Behavior: "allow", Destination: "localSettings",
		Rules: []message.PermissionRule{{ToolName: "Bash", RuleContent: "make deploy"}}}}
	w.leg.Raise(ev)
	testutil.Eventually(t, "both targets get the notification", func() bool {
		a, _ := stand.got()
		b, _ := hook.got()
		return len(a) == 1 && len(b) == 1
	})
	bodies, _ := stand.got()
	m, _ := decodeNtfy(bodies[0])
	if m.Title != "Waiting for you: Bash in work-08" || len(m.Actions) != 3 || m.Actions[1].Label != "Always allow" {
		t.Fatalf("published %+v", m)
	}
	hooked, _ := hook.got()
	var nt Notification
	if err := json.Unmarshal(hooked[0], &nt); err != nil || nt.Source != "hook" || nt.Name != "work-08" {
		t.Fatalf("webhook body %s (%v): want the prompt's source and session name", hooked[0], err)
	}
	if code, text := follow(t, m.Actions[1].URL); code != 200 || !strings.Contains(text, "always") {
		t.Fatalf("always allow: %d %s", code, text)
	}
	as := w.leg.Answers()
	if len(as) != 1 || as[0].Behavior != message.BehaviorAllow || len(as[0].Suggestions) != 1 || as[0].Suggestions[0] != 1 {
		t.Fatalf("the leg got %+v, want an allow with the first suggestion", as)
	}
}
