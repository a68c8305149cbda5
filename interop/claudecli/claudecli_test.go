package claudecli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sessiongateway/gateway/internal/testutil"
	fa "github.com/sessiongateway/gateway/testkit/fakeanthropic"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitLimit bounds every wait on the real CLI so a broken run fails instead
// of hanging; a healthy one takes a few seconds.
const waitLimit = 90 * time.Second

var versionOnce struct {
	sync.Once
	err error
}

// interop gates the tests that run the real CLI: they skip unless
// GATEWAY_INTEROP=1, and then a missing or wrong CLI fails them.
func interop(t *testing.T) {
	t.Helper()
	testutil.Interop(t, "runs the real Claude Code CLI: install it with .ci/install-interop.sh, then run with GATEWAY_INTEROP=1 (GATEWAY_CLAUDE_BIN overrides the binary)")
	bin, err := Bin()
	if err != nil {
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

func TestSessionLifecycle(t *testing.T) {
	interop(t)
	machineID, err := os.ReadFile("/etc/machine-id")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    func(t *testing.T) Options
		sockDir func(o Options) string
		regDir  func(o Options) string
	}{
		{
			"a session without XDG_RUNTIME_DIR binds /tmp/cc-socks and registers under HOME",
			func(t *testing.T) Options { return Options{} },
			func(Options) string { return "/tmp/cc-socks" },
			func(o Options) string { return filepath.Join(o.Home, ".claude", "sessions") },
		},
		{
			"a session with XDG_RUNTIME_DIR binds $XDG_RUNTIME_DIR/cc-socks",
			func(t *testing.T) Options { return Options{XDGRuntimeDir: testutil.ShortTempDir(t)} },
			func(o Options) string { return filepath.Join(o.XDGRuntimeDir, "cc-socks") },
			func(o Options) string { return filepath.Join(o.Home, ".claude", "sessions") },
		},
		{
			"a session with CLAUDE_CONFIG_DIR registers there, not under HOME",
			func(t *testing.T) Options { return Options{ConfigDir: t.TempDir()} },
			func(Options) string { return "/tmp/cc-socks" },
			func(o Options) string { return filepath.Join(o.ConfigDir, "sessions") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := fa.Start(t, fa.Always(fa.Text("pong")))
			o := tt.opts(t)
			o.APIURL, o.Home = api.URL(), t.TempDir()
			s := Start(t, o)

			if got, want := s.RegistryDir(), tt.regDir(o); got != want {
				t.Errorf("RegistryDir() = %s, want %s", got, want)
			}
			wantSock := filepath.Join(tt.sockDir(o), strconv.Itoa(s.PID())+".sock")
			if s.SocketPath() != wantSock {
				t.Errorf("socket = %s, want %s", s.SocketPath(), wantSock)
			}
			checkMode(t, s.SocketPath(), os.ModeSocket|0o600)
			checkMode(t, filepath.Dir(s.SocketPath()), os.ModeDir|0o700)
			checkMode(t, s.RegistryDir(), os.ModeDir|0o700)
			checkMode(t, s.KeyPath(), 0o600)

			// The CLI writes status a moment after binding: under load the
			// first read can come before it.
			var e RegistryEntry
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				var err error
				if e, err = s.Entry(); err != nil {
					t.Fatal(err)
				}
				if e.Status != "" || time.Now().After(deadline) {
					break
				}
			}
			procStart, err := ProcStart(s.PID())
			if err != nil {
				t.Fatal(err)
			}
			pidDomain := regexp.MustCompile(`^linux:` + strings.TrimSpace(string(machineID)) + `:pid:\[[0-9]+\]$`)
			checks := []struct {
				what string
				ok   bool
			}{
				{"pid is the process", e.PID == s.PID()},
				{"version is " + Version, e.Version == Version},
				{"peerProtocol is 1", e.PeerProtocol == 1},
				{"kind is interactive", e.Kind == "interactive"},
				{"entrypoint is sdk-cli", e.Entrypoint == "sdk-cli"},
				{"procStart is /proc field 22", e.ProcStart == procStart},
				{"pidDomain names machine and pid namespace", pidDomain.MatchString(e.PIDDomain)},
				{"status is idle", e.Status == "idle"},
				{"the name is derived", e.NameSource == "derived" && e.Name != ""},
				{"cwd is the session's", e.Cwd == s.Cwd()},
				{"the session id is a UUID", regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(e.SessionID)},
				{"features include notify_idle", strings.Contains(strings.Join(e.PeerFeatures, ","), "notify_idle")},
			}
			for _, c := range checks {
				if !c.ok {
					t.Errorf("registry entry: want %s; got %+v", c.what, e)
				}
			}
			k, err := s.Key()
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(k.PeerToken) || k.ProcStart != e.ProcStart || k.PIDDomain != e.PIDDomain {
				t.Errorf("key file %+v does not match entry %+v", k, e)
			}

			ctx := testutil.Context(t, waitLimit)
			res, err := s.Turn(ctx, "ping from the harness")
			if err != nil {
				t.Fatal(err)
			}
			var result struct {
				Result string `json:"result"`
			}
			if err := res.Decode(&result); err != nil || result.Result != "pong" {
				t.Errorf("turn result = %s, want the fake's pong", res.Raw)
			}
			if !api.Contains("ping from the harness") {
				t.Error("the fake API never saw the user turn")
			}
			if _, err := s.WaitEvent(ctx, func(e Event) bool { return e.Is("system", "init") }); err != nil {
				t.Errorf("no system/init event: %v", err)
			}

			if err := s.Stop(); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			for _, p := range []string{s.SocketPath(), s.EntryPath(), s.KeyPath()} {
				if _, err := os.Lstat(p); !os.IsNotExist(err) {
					t.Errorf("after SIGTERM %s is still there (%v)", p, err)
				}
			}
		})
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

func TestSessionsSharingARegistry(t *testing.T) {
	interop(t)
	const note = "hello B, from A via the real CLI"
	api := fa.Start(t, fa.Rules(fa.Text("ok"),
		fa.CallTools("LIST-PEERS", []fa.Call{{Tool: "ListAgents", Input: `{}`}}, "listed"),
		fa.CallTools("SEND-TO-B", []fa.Call{{Tool: "SendMessage", Input: `{"to":"interop-b","message":"` + note + `"}`}}, "sent"),
	))
	home := t.TempDir()
	b := Start(t, Options{APIURL: api.URL(), Home: home, Name: "interop-b"})
	a := Start(t, Options{APIURL: api.URL(), Home: home, Name: "interop-a"})
	ctx := testutil.Context(t, waitLimit)

	t.Run("ListAgents in one session lists the other by name and ref", func(t *testing.T) {
		if _, err := a.Turn(ctx, "LIST-PEERS"); err != nil {
			t.Fatal(err)
		}
		want := "interop-b [" + b.Ref() + "]"
		if !api.Contains(want) {
			t.Errorf("no request carried %q", want)
		}
	})
	t.Run("SendMessage by name is delivered into the other session", func(t *testing.T) {
		if _, err := a.Turn(ctx, "SEND-TO-B"); err != nil {
			t.Fatal(err)
		}
		// A's own next request quotes the note in its tool result; B's
		// carries it inside the envelope.
		envelope := `<cross-session-message from="uds:` + a.SocketPath() + `" from-name="interop-a" from-mode="prompting">` + "\n" + note
		if _, err := api.WaitContains(ctx, envelope); err != nil {
			t.Errorf("B never saw %q: %v", envelope, err)
		}
	})
}

func TestHeldMessageDecidedByTheHost(t *testing.T) {
	interop(t)
	const note = "a message from a bypass session"
	api := fa.Start(t, fa.Rules(fa.Text("ok"),
		fa.CallTools("SEND-TO-P", []fa.Call{{Tool: "SendMessage", Input: `{"to":"interop-prompting","message":"` + note + `"}`}}, "sent"),
	))
	home := t.TempDir()
	p := Start(t, Options{APIURL: api.URL(), Home: home, Name: "interop-prompting"})
	// Bypass modes are refused as root unless IS_SANDBOX=1.
	b := Start(t, Options{APIURL: api.URL(), Home: home, Name: "interop-bypass",
		Env: []string{"IS_SANDBOX=1"}, Args: []string{"--permission-mode", "bypassPermissions"}})
	ctx := testutil.Context(t, waitLimit)

	if _, err := b.Turn(ctx, "SEND-TO-P"); err != nil {
		t.Fatal(err)
	}
	held, err := p.WaitHold(ctx, func(h Hold) bool { return h.State == "held" })
	if err != nil {
		t.Fatal(err)
	}
	if held.From != "uds:"+b.SocketPath() || held.VerifiedPID != b.PID() || held.SessionClass != "prompting" || held.Cause != "mode-mismatch" {
		t.Errorf("hold = %+v, want one from %s (pid %d), mode-mismatch in a prompting session", held, b.SocketPath(), b.PID())
	}
	// The sender's conversation is told its message is held.
	if _, err := api.WaitContains(ctx, "[Cross-session delivery notice]"); err != nil {
		t.Errorf("the sender was not told of the hold: %v", err)
	}
	if api.Contains("from-mode=\"bypass\">\n" + note) {
		t.Fatal("the held message reached the model before the host decided")
	}
	outcome, err := p.DecideHold(ctx, held.HoldID, true)
	if err != nil {
		t.Fatal(err)
	}
	if outcome != "delivered" {
		t.Errorf("DecideHold outcome = %q, want delivered", outcome)
	}
	if _, err := api.WaitContains(ctx, "from-mode=\"bypass\">\n"+note); err != nil {
		t.Errorf("released message never reached the model: %v", err)
	}
}

func TestTUISession(t *testing.T) {
	interop(t)
	api := fa.Start(t, fa.Always(fa.Text("pong")))
	s := Start(t, Options{APIURL: api.URL(), Mode: ModeTUI, Name: "interop-tui"})
	e, err := s.Entry()
	if err != nil {
		t.Fatal(err)
	}
	if e.Entrypoint != "cli" || e.Name != "interop-tui" || e.NameSource != "user" {
		t.Errorf("TUI entry = %+v, want entrypoint cli and the user-chosen name", e)
	}
	if err := s.SendUserTurn("typed into the TUI"); err != nil {
		t.Fatal(err)
	}
	if _, err := api.WaitContains(testutil.Context(t, waitLimit), "typed into the TUI"); err != nil {
		screen, _ := s.Screen()
		t.Fatalf("%v; screen:\n%s", err, screen)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(s.SocketPath()); !os.IsNotExist(err) {
		t.Errorf("after SIGTERM the socket is still there (%v)", err)
	}
}

// The helpers below run without the CLI.

func TestRefAndKeyPathMatchWhatTheCLIWrote(t *testing.T) {
	// Observed from 2.1.332: pid 26918, socket /tmp/cc-socks/26918.sock,
	// listed as "[22405d]", key file 26918.18119c45....key.
	if got := Ref("/tmp/cc-socks/26918.sock"); got != "22405d" {
		t.Errorf("Ref = %s, want 22405d", got)
	}
	want := "/r/26918.18119c45f3dc063756e22010a63b1d0e99d19a21a335fc1ae2d05ddba8295d6a.key"
	if got := KeyPath("/r", 26918, "/tmp/cc-socks/26918.sock"); got != want {
		t.Errorf("KeyPath = %s, want %s", got, want)
	}
}

func TestProcStartReadsField22(t *testing.T) {
	got, err := ProcStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	// Our own command name has no spaces, so a plain split is right here.
	if want := strings.Fields(string(b))[21]; got != want {
		t.Errorf("ProcStart = %s, want %s", got, want)
	}
}

func TestPreseed(t *testing.T) {
	suffix := DummyAPIKey[len(DummyAPIKey)-20:]
	tests := []struct {
		name     string
		existing string // "" for no file
		cwds     []string
	}{
		{"a missing config is created trusting the cwd", "", []string{"/w/a"}},
		{"keys the CLI wrote are kept", `{"userID":"u1","projects":{"/w/a":{"allowedTools":["Bash"]}}}`, []string{"/w/a"}},
		{"a second session's cwd is added, not swapped in", "", []string{"/w/a", "/w/b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".claude.json")
			if tt.existing != "" {
				if err := os.WriteFile(path, []byte(tt.existing), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			for _, cwd := range tt.cwds {
				if err := preseed(path, cwd); err != nil {
					t.Fatal(err)
				}
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var cfg struct {
				Onboarded bool   `json:"hasCompletedOnboarding"`
				UserID    string `json:"userID"`
				Responses struct {
					Approved []string `json:"approved"`
				} `json:"customApiKeyResponses"`
				Projects map[string]struct {
					Trusted bool     `json:"hasTrustDialogAccepted"`
					Allowed []string `json:"allowedTools"`
				} `json:"projects"`
			}
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			if !cfg.Onboarded || len(cfg.Responses.Approved) != 1 || cfg.Responses.Approved[0] != suffix {
				t.Errorf("config %s: want onboarding done and the key approved once", b)
			}
			for _, cwd := range tt.cwds {
				if !cfg.Projects[cwd].Trusted {
					t.Errorf("config %s: %s not trusted", b, cwd)
				}
			}
			if tt.existing != "" && (cfg.UserID != "u1" || len(cfg.Projects["/w/a"].Allowed) != 1) {
				t.Errorf("config %s lost keys that were there", b)
			}
		})
	}
}

func TestSettingsAreWrittenPrivateAndOnlyAsAJSONObject(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr bool
	}{
		{"a hooks object is written as given", `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"true"}]}]}}`, false},
		{"broken JSON is refused", `{"hooks":`, true},
		{"a JSON array is refused", `[]`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), ".claude")
			err := writeSettings(dir, []byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("writeSettings: %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			path := filepath.Join(dir, "settings.json")
			b, err := os.ReadFile(path)
			if err != nil || string(b) != tt.in {
				t.Fatalf("settings.json = %q, %v", b, err)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
				t.Errorf("settings.json mode %v, want 0600", fi.Mode().Perm())
			}
		})
	}
}

func TestParseEvent(t *testing.T) {
	tests := []struct {
		name          string
		line          string
		typ, subtype  string
		keepsTheWhole bool
	}{
		{"an init event has type and subtype", `{"type":"system","subtype":"init","cwd":"/w"}` + "\n", "system", "init", true},
		{"an assistant event has no subtype", `{"type":"assistant","message":{}}`, "assistant", "", true},
		{"a line that is not JSON is kept raw", `not json`, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := parseEvent([]byte(tt.line))
			if e.Type != tt.typ || e.Subtype != tt.subtype || string(e.Raw) != strings.TrimSpace(tt.line) {
				t.Errorf("parseEvent(%q) = %+v", tt.line, e)
			}
		})
	}
}

func FuzzParseEvent(f *testing.F) {
	f.Add([]byte(`{"type":"system","subtype":"peer_message_hold","state":"held","hold_id":"h"}`))
	f.Add([]byte(`{"type":"control_response","response":{"subtype":"success","request_id":"claudecli-1"}}`))
	f.Add([]byte("\n"))
	f.Fuzz(func(t *testing.T, line []byte) {
		e := parseEvent(line)
		if string(e.Raw) != strings.TrimSpace(string(line)) {
			t.Fatalf("Raw %q is not the trimmed line %q", e.Raw, line)
		}
		var h Hold
		e.Decode(&h) // must not panic
	})
}
