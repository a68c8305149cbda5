package qwencli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sessiongateway/gateway/internal/testutil"
	fo "github.com/sessiongateway/gateway/testkit/fakeopenai"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitLimit bounds every wait on the real CLI so a broken run fails instead
// of hanging; a healthy one takes a few seconds.
const waitLimit = 90 * time.Second

var versionOnce struct {
	sync.Once
	err error
}

// interop gates the tests that run the real CLI and SDK: they skip unless
// GATEWAY_INTEROP=1, and then a missing or wrong CLI, SDK or node fails them.
func interop(t *testing.T) {
	t.Helper()
	testutil.Interop(t, "runs the real Qwen Code CLI and SDK: install them with .ci/install-interop.sh, then run with GATEWAY_INTEROP=1 (GATEWAY_QWEN_BIN overrides the binary)")
	bin, err := Bin()
	if err != nil {
		t.Fatalf("GATEWAY_INTEROP=1 but: %v", err)
	}
	if _, err := NodeModules(); err != nil {
		t.Fatalf("GATEWAY_INTEROP=1 but: %v", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("GATEWAY_INTEROP=1 but: %v", err)
	}
	versionOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		versionOnce.err = CheckVersion(ctx, bin)
	})
	if versionOnce.err != nil {
		t.Fatal(versionOnce.err)
	}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Error(err)
		return
	}
	if got := fi.Mode() & (os.ModeType | os.ModePerm); got != want {
		t.Errorf("%s has mode %v, want %v", path, got, want)
	}
}

// derivedName is the name a session registers for a cwd when nobody chose
// one: the base name, a dash, and two hex digits of sha256(sessionId).
func derivedName(cwd, sessionID string) string {
	sum := sha256.Sum256([]byte(sessionID))
	return filepath.Base(cwd) + "-" + hex.EncodeToString(sum[:1])
}

// logRequests shows what the fake model was asked, for a failure message.
func logRequests(t *testing.T, api *fo.Server) {
	t.Helper()
	for i, r := range api.Requests() {
		last := r.Messages[len(r.Messages)-1]
		text := last.Text()
		if len(text) > 120 {
			text = text[:120] + "..."
		}
		t.Logf("request %d: %d messages, %d tools, last %s: %q, %d calls so far", i+1, len(r.Messages), len(r.Tools), last.Role, text, len(r.ToolCalls()))
	}
}

func TestTUISessionRegisters(t *testing.T) {
	interop(t)
	api := fo.Start(t, fo.Always(fo.Text("pong")))
	s := Start(t, Options{APIURL: api.BaseURL(), ApprovalMode: ModeDefault})

	rec, err := s.Record()
	if err != nil {
		t.Fatal(err)
	}
	procStart, err := ProcStart(s.PID())
	if err != nil {
		t.Fatal(err)
	}
	ns, err := PIDNs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(s.PID()) + "/cmdline")
	wantSock := filepath.Join(s.XDGRuntimeDir(), "qwen-socks", strconv.Itoa(s.PID())+".sock")
	checks := []struct {
		what string
		ok   bool
	}{
		{"schemaVersion is 1", rec.SchemaVersion == 1},
		{"the pid is a node process under the launcher, not the launcher", rec.PID != s.LauncherPID() && descendsFrom(rec.PID, s.LauncherPID()) && strings.Contains(string(cmdline), "cli.js")},
		{"the file is named by the pid", filepath.Base(s.RecordPath()) == strconv.Itoa(rec.PID)+".json"},
		{"procStart is boot id and start ticks", rec.ProcStart == procStart},
		{"pidNs is our pid namespace", rec.PIDNs == ns},
		{"kind is tui", rec.Kind == "tui"},
		{"qwenVersion is " + Version, rec.QwenVersion == Version},
		{"the session id is a UUID", regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(rec.SessionID)},
		{"the name is derived from the cwd and session id", rec.Name == derivedName(s.Cwd(), rec.SessionID)},
		{"cwd is the session's", rec.Cwd == s.Cwd()},
		{"the socket is $XDG_RUNTIME_DIR/qwen-socks/<pid>.sock", rec.IPCPath == wantSock},
		{"the token is 64 hex", regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(string(rec.IPCToken))},
		{"startedAt is Unix ms of about now", time.Since(time.UnixMilli(rec.StartedAt)).Abs() < 10*time.Minute},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("record: want %s; got %+v", c.what, rec)
		}
	}
	checkMode(t, filepath.Dir(s.RecordPath()), os.ModeDir|0o700)
	checkMode(t, s.RecordPath(), 0o600)
	checkMode(t, filepath.Dir(rec.IPCPath), os.ModeDir|0o700)
	checkMode(t, rec.IPCPath, os.ModeSocket|0o600)

	if err := s.TypeTurn("ping from the harness"); err != nil {
		t.Fatal(err)
	}
	if _, err := api.WaitContains(testutil.Context(t, waitLimit), "ping from the harness"); err != nil {
		t.Fatalf("the fake API never saw the typed turn: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, p := range []string{s.RecordPath(), rec.IPCPath} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("after SIGTERM %s is still there (%v)", p, err)
		}
	}
}

func TestSessionsPsListsTheSession(t *testing.T) {
	interop(t)
	api := fo.Start(t, fo.Always(fo.Text("pong")))
	s := Start(t, Options{APIURL: api.BaseURL()})
	rec, err := s.Record()
	if err != nil {
		t.Fatal(err)
	}
	listed, raw, err := ListSessions(testutil.Context(t, waitLimit), "", s.QwenHome())
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 {
		t.Fatalf("sessions ps --json listed %d sessions, want 1:\n%s", len(listed), raw)
	}
	want := rec
	want.IPCToken = ""
	if listed[0] != want {
		t.Errorf("sessions ps --json = %+v\nwant the record without its token: %+v", listed[0], want)
	}
	if strings.Contains(string(raw), "ipcToken") || strings.Contains(string(raw), string(rec.IPCToken)) {
		t.Error("sessions ps --json printed the token")
	}
}

func TestEndpointSendsToTUIByName(t *testing.T) {
	interop(t)
	tests := []struct {
		mode  string
		cases []struct {
			name     string
			fromMode string
			want     string
		}
	}{
		{ModeDefault, []struct {
			name     string
			fromMode string
			want     string
		}{
			{"a prompting sender to a default-mode session is delivered", FromPrompting, StatusDelivered},
			{"a bypass sender to a default-mode session is held", FromBypass, StatusHeld},
			{"a sender asserting no mode is held", "", StatusHeld},
		}},
		{ModeYolo, []struct {
			name     string
			fromMode string
			want     string
		}{
			{"a bypass sender to a yolo session is delivered", FromBypass, StatusDelivered},
			{"a prompting sender to a yolo session is held", FromPrompting, StatusHeld},
		}},
	}
	for _, group := range tests {
		api := fo.Start(t, fo.Always(fo.Text("pong")))
		home := testutil.ShortTempDir(t)
		s := Start(t, Options{APIURL: api.BaseURL(), QwenHome: home, ApprovalMode: group.mode})
		ep := StartEndpoint(t, EndpointOptions{Name: "interop-sdk", QwenHome: home})
		for _, tt := range group.cases {
			t.Run(tt.name, func(t *testing.T) {
				ctx := testutil.Context(t, waitLimit)
				content := "note for " + group.mode + " from " + tt.fromMode + " sender"
				res, err := ep.Send(ctx, SendOptions{To: s.Name(), Content: content, FromMode: tt.fromMode})
				if err != nil {
					t.Fatal(err)
				}
				if res.Kind != "sent" || res.Peer == nil || res.Peer.SessionID != s.SessionID() {
					t.Fatalf("send = %+v, want sent to %s", res, s.SessionID())
				}
				r, err := ep.WaitReceipt(ctx, res.MsgID, "")
				if err != nil {
					t.Fatal(err)
				}
				if r.Status != tt.want || r.Previous != "pending" {
					t.Errorf("first receipt = %+v, want %s", r, tt.want)
				}
				envelope := `<cross_session_message from="` + ep.IPCPath() + `" name="` + ep.Name() + `">` + "\n" + content + "\n</cross_session_message>"
				if tt.want == StatusDelivered {
					if _, err := api.WaitContains(ctx, envelope); err != nil {
						t.Errorf("the session's model never saw %q: %v", envelope, err)
					}
				} else if api.Contains(content) {
					t.Error("a held message reached the model")
				}
			})
		}
	}
}

func TestTUISendMessageReachesEndpoint(t *testing.T) {
	interop(t)
	const note = "hello endpoint, from the real TUI"
	home := testutil.ShortTempDir(t)
	ep := StartEndpoint(t, EndpointOptions{Name: "interop-endpoint", QwenHome: home})
	api := fo.Start(t, fo.CallToolOnce("SEND-TO-ENDPOINT", fo.SendMessageCall(ep.Name(), note), "sent"))
	s := Start(t, Options{APIURL: api.BaseURL(), QwenHome: home, ApprovalMode: ModeYolo})
	ctx := testutil.Context(t, waitLimit)

	if err := s.TypeTurn("SEND-TO-ENDPOINT"); err != nil {
		t.Fatal(err)
	}
	m, err := ep.WaitMessage(ctx, func(m InboundMessage) bool { return m.Content == note })
	if err != nil {
		logRequests(t, api)
		t.Fatal(err)
	}
	if m.From != s.IPCPath() || m.FromName != s.Name() || m.FromMode != FromBypass || m.Priority != "next" {
		t.Errorf("message = %+v, want one from %s (%s), bypass, next", m, s.Name(), s.IPCPath())
	}
	// The tool result the model gets back says where it went.
	if _, err := api.WaitContains(ctx, "Sent to "+ep.Name()); err != nil {
		t.Errorf("the send_message result never reached the model: %v", err)
	}
}

func TestControllerTokenIsDeliveredWithoutReview(t *testing.T) {
	interop(t)
	home := testutil.ShortTempDir(t)
	ctx := testutil.Context(t, waitLimit)
	c, err := AddController(ctx, "", home, "interop-bridge")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^qpc_[0-9a-f]{64}$`).MatchString(string(c.Token)) || !regexp.MustCompile(`^c_[0-9a-f]{8}$`).MatchString(c.ID) {
		t.Fatalf("controller = id %q, token of %d bytes", c.ID, len(c.Token))
	}
	t.Run("the grant is stored as the token's sha256, never the token", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(home, "peer-controllers.json"))
		if err != nil {
			t.Fatal(err)
		}
		var grants struct {
			SchemaVersion int `json:"schemaVersion"`
			Controllers   []struct {
				ID, Label, TokenHash string
				CreatedAt            int64
			} `json:"controllers"`
		}
		if err := json.Unmarshal(b, &grants); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(c.Token))
		if len(grants.Controllers) != 1 || grants.Controllers[0].TokenHash != hex.EncodeToString(sum[:]) ||
			grants.Controllers[0].ID != c.ID || grants.Controllers[0].Label != c.Label {
			t.Errorf("peer-controllers.json = %s", b)
		}
		if strings.Contains(string(b), string(c.Token)[4:]) {
			t.Error("peer-controllers.json holds the token")
		}
		checkMode(t, filepath.Join(home, "peer-controllers.json"), 0o600)
	})
	t.Run("a controller send asserting no mode reaches a default-mode session", func(t *testing.T) {
		api := fo.Start(t, fo.Always(fo.Text("pong")))
		s := Start(t, Options{APIURL: api.BaseURL(), QwenHome: home, ApprovalMode: ModeDefault})
		ep := StartEndpoint(t, EndpointOptions{Name: "interop-controller", QwenHome: home, ControllerToken: c.Token})
		res, err := ep.Send(ctx, SendOptions{To: s.Name(), Content: "from the controller", Controller: true})
		if err != nil || res.Kind != "sent" {
			t.Fatalf("send = %+v, %v", res, err)
		}
		if r, err := ep.WaitReceipt(ctx, res.MsgID, ""); err != nil || r.Status != StatusDelivered {
			t.Fatalf("receipt = %+v, %v; want delivered", r, err)
		}
		envelope := `origin="controller" controller="interop-bridge">` + "\nfrom the controller\n"
		if _, err := api.WaitContains(ctx, envelope); err != nil {
			t.Errorf("the model never saw %q: %v", envelope, err)
		}
	})
}

func TestEndpointsExchangeMessages(t *testing.T) {
	interop(t)
	home := testutil.ShortTempDir(t)
	a := StartEndpoint(t, EndpointOptions{Name: "endpoint-a", QwenHome: home})
	b := StartEndpoint(t, EndpointOptions{Name: "endpoint-b", QwenHome: home})
	r := StartEndpoint(t, EndpointOptions{Name: "endpoint-refusing", QwenHome: home, Refuse: true})
	ctx := testutil.Context(t, waitLimit)

	t.Run("each endpoint lists the others by name, with kind external", func(t *testing.T) {
		list, err := a.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]PeerSession{}
		for _, p := range list {
			got[p.Name] = p
		}
		if p := got["endpoint-b"]; len(list) != 2 || p.SessionID != b.SessionID() || p.Kind != "external" || p.Ref != b.Ref() || p.Ref != Ref(b.SessionID()) {
			t.Errorf("list = %+v", list)
		}
	})
	t.Run("a message sent by name arrives once with its claims, and is receipted delivered", func(t *testing.T) {
		res, err := a.Send(ctx, SendOptions{To: "endpoint-b", Content: "hi b", FromMode: FromPrompting})
		if err != nil || res.Kind != "sent" {
			t.Fatalf("send = %+v, %v", res, err)
		}
		m, err := b.WaitMessage(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if m.MsgID != res.MsgID || m.Content != "hi b" || m.From != a.IPCPath() || m.FromName != "endpoint-a" || m.FromMode != FromPrompting {
			t.Errorf("message = %+v", m)
		}
		if _, err := a.WaitReceipt(ctx, res.MsgID, StatusDelivered); err != nil {
			t.Error(err)
		}
	})
	t.Run("an endpoint without onMessage answers refused", func(t *testing.T) {
		res, err := a.Send(ctx, SendOptions{To: "endpoint-refusing", Content: "hi r"})
		if err != nil || res.Kind != "sent" {
			t.Fatalf("send = %+v, %v", res, err)
		}
		if _, err := a.WaitReceipt(ctx, res.MsgID, StatusRefused); err != nil {
			t.Error(err)
		}
	})
	t.Run("a name nobody has is not-found, and nothing is sent", func(t *testing.T) {
		res, err := a.Send(ctx, SendOptions{To: "nobody", Content: "x"})
		if err != nil || res.Kind != "not-found" || res.MsgID != "" {
			t.Errorf("send = %+v, %v", res, err)
		}
	})
	t.Run("the record holds the token the endpoint's inbox requires", func(t *testing.T) {
		rec, err := b.Record()
		if err != nil {
			t.Fatal(err)
		}
		if rec.Kind != "external" || rec.IPCPath != b.IPCPath() || rec.PID != b.PID() || len(rec.IPCToken) != 64 || rec.QwenVersion != "" {
			t.Errorf("record = %+v", rec)
		}
	})
	t.Run("closing removes the record and the socket", func(t *testing.T) {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{r.RecordPath(), r.IPCPath()} {
			if _, err := os.Lstat(p); !os.IsNotExist(err) {
				t.Errorf("after Close %s is still there (%v)", p, err)
			}
		}
	})
}
