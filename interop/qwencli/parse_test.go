package qwencli

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tests below run without the CLI.

// psOutput is what `qwen sessions ps --json` printed for two sessions
// (0.24.4): no ipcToken, null qwenVersion for an SDK endpoint.
const psOutput = `{"schemaVersion":1,"pid":16488,"procStart":"eaa3645c-0a2f-4612-b5b4-1586bb7cbe72:364375","pidNs":4026531836,"sessionId":"2e893f17-a725-4dd8-abaf-ae06faf73f1e","cwd":"/tmp/qinv/w1/au","name":"au-79","startedAt":1795984202815,"qwenVersion":"0.24.4","kind":"tui","ipcPath":"/tmp/qinv/w1/rt/qwen-socks/16488.sock"}
{"schemaVersion":1,"pid":16221,"procStart":"eaa3645c-0a2f-4612-b5b4-1586bb7cbe72:361434","pidNs":4026531836,"sessionId":"f8442e7e-3bc2-43dd-836d-be48d7c1b93b","cwd":"/tmp/qinv/w1","name":"sdk-peer","startedAt":1795984171629,"qwenVersion":null,"kind":"external","ipcPath":"/tmp/qinv/w1/rt/qwen-socks/16221.sock"}
`

func TestParseRecordLines(t *testing.T) {
	recs, err := ParseRecordLines([]byte(psOutput + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{
		{SchemaVersion: 1, PID: 16488, ProcStart: "eaa3645c-0a2f-4612-b5b4-1586bb7cbe72:364375", PIDNs: 4026531836,
			SessionID: "2e893f17-a725-4dd8-abaf-ae06faf73f1e", Cwd: "/tmp/qinv/w1/au", Name: "au-79", StartedAt: 1795984202815,
			QwenVersion: "0.24.4", Kind: "tui", IPCPath: "/tmp/qinv/w1/rt/qwen-socks/16488.sock"},
		{SchemaVersion: 1, PID: 16221, ProcStart: "eaa3645c-0a2f-4612-b5b4-1586bb7cbe72:361434", PIDNs: 4026531836,
			SessionID: "f8442e7e-3bc2-43dd-836d-be48d7c1b93b", Cwd: "/tmp/qinv/w1", Name: "sdk-peer", StartedAt: 1795984171629,
			Kind: "external", IPCPath: "/tmp/qinv/w1/rt/qwen-socks/16221.sock"},
	}
	if len(recs) != len(want) {
		t.Fatalf("got %d records, want %d", len(recs), len(want))
	}
	for i := range want {
		if recs[i] != want[i] {
			t.Errorf("record %d = %+v, want %+v", i, recs[i], want[i])
		}
	}
}

func TestParseRecordRejectsWhatIsNotARecord(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"not JSON", `{"pid":`},
		{"not an object", `[1]`},
		{"no pid", `{"sessionId":"s"}`},
		{"a negative pid", `{"pid":-4,"sessionId":"s"}`},
		{"no session id", `{"pid":4}`},
		{"a pid of the wrong type", `{"pid":"4","sessionId":"s"}`},
	}
	for _, tt := range tests {
		t.Run("a line that is "+tt.name+" is an error", func(t *testing.T) {
			if _, err := ParseRecord([]byte(tt.in)); !errors.Is(err, ErrBadRecord) {
				t.Errorf("ParseRecord(%s) error = %v, want ErrBadRecord", tt.in, err)
			}
			if _, err := ParseRecordLines([]byte(psOutput + tt.in + "\n")); !errors.Is(err, ErrBadRecord) {
				t.Errorf("ParseRecordLines error = %v, want ErrBadRecord", err)
			}
		})
	}
}

func FuzzParseRecordLines(f *testing.F) {
	f.Add([]byte(psOutput))
	f.Add([]byte(`{"schemaVersion":1,"pid":1,"sessionId":"s","procStart":null,"pidNs":null,"ipcToken":"x"}`))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := ParseRecordLines(b)
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.PID <= 0 || r.SessionID == "" {
				t.Fatalf("accepted %+v", r)
			}
			// A record must survive its own encoding.
			enc, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseRecord(enc)
			if err != nil || back != r {
				t.Fatalf("round trip of %+v gave %+v, %v", r, back, err)
			}
		}
	})
}

// controllersAddOutput is what `qwen sessions controllers add --label
// voice-bridge` printed (0.24.4), with the token replaced.
var controllersAddOutput = `Controller "voice-bridge" added (c_1ed22db1).

Token — shown once and never stored, so put it in the controller's own configuration now:
  qpc_` + strings.Repeat("ab", 32) + `

The controller presents it on the first line of every connection to a session inbox:
  {"msgV":1,"type":"auth","token":"qpc_` + strings.Repeat("ab", 32) + `"}
The target session must not have agents.crossSessionMessaging turned off (it is on by default), and must be restarted after changing that setting.
Messages it sends are delivered without per-message review, unless agents.crossSessionInbound is "hold" or "refuse".
`

func TestParseControllerAdd(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    Controller
		wantErr bool
	}{
		{"what the CLI prints gives the id and the token", controllersAddOutput, Controller{ID: "c_1ed22db1", Token: Token("qpc_" + strings.Repeat("ab", 32))}, false},
		{"output without a token is an error", "Controller \"x\" added (c_1ed22db1).\n", Controller{}, true},
		{"output without an id is an error", "  qpc_" + strings.Repeat("ab", 32) + "\n", Controller{}, true},
		{"a token too short is not a token", "added (c_1ed22db1)\n  qpc_abab\n", Controller{}, true},
		{"two different tokens are an error", controllersAddOutput + "qpc_" + strings.Repeat("cd", 32) + "\n", Controller{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseControllerAdd([]byte(tt.out))
			if tt.wantErr {
				if !errors.Is(err, ErrNoController) {
					t.Errorf("error = %v, want ErrNoController", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %+v (token %q), %v; want %+v", got, string(got.Token), err, tt.want)
			}
		})
	}
}

func FuzzParseControllerAdd(f *testing.F) {
	f.Add([]byte(controllersAddOutput))
	f.Add([]byte("added (c_1) qpc_" + strings.Repeat("0", 64)))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseControllerAdd(b)
		if err != nil {
			return
		}
		if !strings.HasPrefix(c.ID, "c_") || len(c.Token) != 68 || !strings.Contains(string(b), string(c.Token)) {
			t.Fatalf("accepted id %q token %q from %q", c.ID, string(c.Token), b)
		}
	})
}

func TestParseEvent(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		event   string
		id      int
		wantErr bool
	}{
		{"a started line names its event", `{"event":"started","sessionId":"s","ipcPath":"/r/1.sock"}`, "started", 0, false},
		{"a result carries its command id", `{"event":"result","id":7,"cmd":"list","result":[]}`, "result", 7, false},
		{"a line without an event is refused", `{"id":1}`, "", 0, true},
		{"a line that is not JSON is refused", `Debugger attached.`, "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := parseEvent([]byte(tt.line))
			if tt.wantErr {
				if !errors.Is(err, ErrBadEvent) {
					t.Errorf("error = %v, want ErrBadEvent", err)
				}
				return
			}
			if err != nil || ev.Event != tt.event || ev.ID != tt.id || string(ev.Raw) != tt.line {
				t.Errorf("parseEvent = %+v, %v", ev, err)
			}
		})
	}
}

func FuzzParseEvent(f *testing.F) {
	f.Add([]byte(`{"event":"message","msgId":"m","content":"hi","from":"/r/1.sock","fromMode":"bypass"}`))
	f.Add([]byte(`{"event":"receipt","msgId":"m","status":"dropped","previous":"pending","dropReason":"duplicate"}`))
	f.Add([]byte(`{"event":"result","id":2,"cmd":"send","result":{"kind":"sent","msgId":"m","peer":{"pid":3}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := parseEvent(line)
		if err != nil {
			return
		}
		if ev.Event == "" || string(ev.Raw) != string(line) {
			t.Fatalf("parseEvent(%q) = %+v", line, ev)
		}
		// Filing it must not panic, whatever it holds.
		e := &Endpoint{results: map[int]endpointEvent{}, changed: make(chan struct{})}
		e.add(ev)
		var r SendResult
		json.Unmarshal(ev.Result, &r)
	})
}

// Screens captured from 0.24.4 under tmux (trimmed): the input box sits
// between the last two rules; a submitted line above it carries the same mark.
const (
	screenYolo = `  > ping from harness
  ◆︎ pong
────────────────────────────────────────
*   Type your message or @path/to/file
────────────────────────────────────────
  ➜ cwd · fake-model
  YOLO mode (shift + tab to cycle)
`
	screenTyped = `  ●︎ Message from another session (sdk-peer): hello
────────────────────────────────────────
>   SEND-TO-ENDPOINT
────────────────────────────────────────
  ➜ pd · fake-model
  ⏸ Ask permissions (shift + tab to cycle)
`
	screenStarting = `  ▄▄▄▄▄▄  ▄▄     ▄▄ ▄▄▄▄▄▄▄ ▄▄▄    ▄▄   ┌──────────────────┐
  ██╔═══██╗██║    ██║██╔════╝████╗  ██║  │ >_ Qwen Code      │
`
)

func TestInputBox(t *testing.T) {
	tests := []struct {
		name, screen, want string
	}{
		{"the empty box shows its placeholder, not the submitted line", screenYolo, "*   Type your message or @path/to/file"},
		{"typed text shows in the box", screenTyped, ">   SEND-TO-ENDPOINT"},
		{"a screen without rules has no box", screenStarting, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := InputBox(tt.screen); got != tt.want {
				t.Errorf("InputBox = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSubmitted(t *testing.T) {
	dialog := "  > SEND-TO-ENDPOINT\n  ? SendMessage Send to sniff: hello\n   Do you want to proceed?\n   › 1. Yes, allow once\n"
	tests := []struct {
		name, screen string
		want         bool
	}{
		{"the box back with its placeholder means submitted", screenYolo, true},
		{"the text still in the box is not submitted", screenTyped, false},
		{"a dialog hiding the box, below the submitted line, means submitted", dialog, true},
		{"a screen mid-redraw, with neither box nor text, proves nothing", screenStarting, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := submitted(tt.screen, "SEND-TO-ENDPOINT"); got != tt.want {
				t.Errorf("submitted = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRefMatchesWhatTheCLIShowed(t *testing.T) {
	// Observed from 0.24.4: list_agents showed these refs for these ids.
	for id, want := range map[string]string{
		"7d1e1d16-5f69-49e6-a9a9-1606dbcc6338": "600f38",
		"f8442e7e-3bc2-43dd-836d-be48d7c1b93b": "01ca64",
	} {
		if got := Ref(id); got != want {
			t.Errorf("Ref(%s) = %s, want %s", id, got, want)
		}
	}
}

func TestProcStartIsBootIDAndField22(t *testing.T) {
	got, err := ProcStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	stat, _ := os.ReadFile("/proc/self/stat")
	// Our own command name has no spaces, so a plain split is right here.
	want := strings.TrimSpace(string(boot)) + ":" + strings.Fields(string(stat))[21]
	if got != want {
		t.Errorf("ProcStart = %s, want %s", got, want)
	}
}

func TestDescendsFrom(t *testing.T) {
	if !descendsFrom(os.Getpid(), os.Getppid()) || !descendsFrom(os.Getpid(), os.Getpid()) {
		t.Error("a process does not descend from its parent or itself")
	}
	if descendsFrom(os.Getppid(), os.Getpid()) {
		t.Error("a parent descends from its child")
	}
}

func TestWriteSettings(t *testing.T) {
	tests := []struct {
		name     string
		existing string // "" for no file
		extra    map[string]any
		check    func(cfg map[string]any) error
	}{
		{"a missing file gets the offline settings", "", nil, func(cfg map[string]any) error {
			auth := cfg["security"].(map[string]any)["auth"].(map[string]any)
			if auth["selectedType"] != "openai" || cfg["model"].(map[string]any)["name"] != "fake-model" ||
				cfg["telemetry"].(map[string]any)["enabled"] != false || cfg["general"].(map[string]any)["enableAutoUpdate"] != false ||
				cfg["privacy"].(map[string]any)["usageStatisticsEnabled"] != false {
				return fmt.Errorf("%v", cfg)
			}
			return nil
		}},
		{"keys the CLI wrote are kept", `{"$version":4,"model":{"name":"other"}}`, nil, func(cfg map[string]any) error {
			if cfg["$version"] != float64(4) || cfg["model"].(map[string]any)["name"] != "fake-model" {
				return fmt.Errorf("%v", cfg)
			}
			return nil
		}},
		{"extra settings are merged in", "", map[string]any{"agents": map[string]any{"crossSessionInbound": "hold"}}, func(cfg map[string]any) error {
			if cfg["agents"].(map[string]any)["crossSessionInbound"] != "hold" || cfg["security"] == nil {
				return fmt.Errorf("%v", cfg)
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "settings.json")
			if tt.existing != "" {
				if err := os.WriteFile(path, []byte(tt.existing), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := writeSettings(path, tt.extra); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var cfg map[string]any
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			if err := tt.check(cfg); err != nil {
				t.Errorf("settings: %v", err)
			}
		})
	}
}

func TestBin(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "qwen")
	plain := filepath.Join(dir, "plain")
	os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(plain, []byte(""), 0o644)
	tests := []struct {
		name    string
		env     string
		wantErr bool
	}{
		{"an executable named by GATEWAY_QWEN_BIN is used", exe, false},
		{"a missing file is ErrNoBinary", filepath.Join(dir, "missing"), true},
		{"a file that is not executable is ErrNoBinary", plain, true},
		{"a directory is ErrNoBinary", dir, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GATEWAY_QWEN_BIN", tt.env)
			got, err := Bin()
			if tt.wantErr != errors.Is(err, ErrNoBinary) || (!tt.wantErr && got != tt.env) {
				t.Errorf("Bin() = %q, %v", got, err)
			}
		})
	}
}

func TestNodeModulesWithoutTheSDKIsErrNoSDK(t *testing.T) {
	t.Setenv("GATEWAY_QWEN_NODE_MODULES", t.TempDir())
	if _, err := NodeModules(); !errors.Is(err, ErrNoSDK) {
		t.Errorf("NodeModules() error = %v, want ErrNoSDK", err)
	}
}

func TestTokensDoNotPrint(t *testing.T) {
	const secret = "27290ef5f9bfa73c566bab634ab828e6"
	rec := Record{PID: 1, SessionID: "s", IPCToken: Token(secret)}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("record", "token", rec.IPCToken)
	for _, s := range []string{fmt.Sprintf("%v %+v %#v %s", rec, rec, rec, rec.IPCToken), logged.String()} {
		if strings.Contains(s, secret) {
			t.Errorf("the token printed: %s", s)
		}
	}
	if b, _ := json.Marshal(rec); !strings.Contains(string(b), secret) {
		t.Error("JSON lost the token; a record must still round-trip")
	}
}

func TestTypeTurnRefusesWhatIsNotOneLine(t *testing.T) {
	s := &Session{}
	for _, text := range []string{"", "  ", "two\nlines"} {
		if err := s.TypeTurn(text); err == nil {
			t.Errorf("TypeTurn(%q) did not refuse", text)
		}
	}
}
