package claude

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// regEnv is a private set of directories for one registration.
type regEnv struct {
	configDir, runtimeDir, tmpDir string
}

// newRegEnv makes short directories (socket paths must stay under 103
// bytes, and t.TempDir's are long) that are removed at cleanup.
func newRegEnv(t *testing.T) regEnv {
	t.Helper()
	return regEnv{configDir: t.TempDir(), runtimeDir: testutil.ShortTempDir(t), tmpDir: testutil.ShortTempDir(t)}
}

func (r regEnv) config() Config {
	return Config{ConfigDir: r.configDir, RuntimeDir: r.runtimeDir, TmpDir: r.tmpDir, Cwd: "/work/x"}
}

func (r regEnv) sessionsDir() string { return filepath.Join(r.configDir, "sessions") }

// socketPath is where the real CLI binds for our pid, worked out here
// rather than by the package.
func (r regEnv) socketPath() string {
	return filepath.Join(r.runtimeDir, "cc-socks", strconv.Itoa(os.Getpid())+".sock")
}

// keyPath is <pid>.<sha256 hex of the socket path>.key, computed here.
func (r regEnv) keyPath() string {
	sum := sha256.Sum256([]byte(r.socketPath()))
	return filepath.Join(r.sessionsDir(), fmt.Sprintf("%d.%s.key", os.Getpid(), hex.EncodeToString(sum[:])))
}

func (r regEnv) entryPath() string {
	return filepath.Join(r.sessionsDir(), strconv.Itoa(os.Getpid())+".json")
}

// serveT runs p until the test ends, then waits for it to deregister.
func serveT(t *testing.T, p *Leg) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, make(chan message.Event, 64)) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// ownProcStart is field 22 of /proc/self/stat, read here rather than by
// the package: the start time in clock ticks, as the real CLI writes it.
func ownProcStart(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	// comm (field 2) may hold spaces and parentheses: count from the last ')'.
	rest := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return rest[22-3] // rest[0] is field 3
}

// ownPidDomain is linux:<machine-id>:pid:[<inode>], read here.
func ownPidDomain(t *testing.T) string {
	t.Helper()
	mid, err := os.ReadFile("/etc/machine-id")
	testutil.Need(t, err == nil, "no /etc/machine-id: %v", err)
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	return "linux:" + strings.TrimSpace(string(mid)) + ":" + ns
}

func writeRaw(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func assertGone(t *testing.T, path, what string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s %s is still there (%v)", what, path, err)
	}
}

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestRegisterWritesWhatTheRealCLIWrites(t *testing.T) {
	tests := []struct {
		name     string
		cfgName  string
		wantName string
	}{
		{"without a name it registers as gateway", "", "gateway"},
		{"a configured name is the registered name", "work-7", "work-7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newRegEnv(t)
			cfg := env.config()
			cfg.Name = tt.cfgName
			cfg.Version = "1.2.3"
			p, err := Register(cfg)
			if err != nil {
				t.Fatal(err)
			}
			stop := serveT(t, p)
			procStart, pidDomain := ownProcStart(t), ownPidDomain(t)

			// The socket: in <runtime>/cc-socks (0700), mode 0600.
			if p.SocketPath() != env.socketPath() {
				t.Errorf("socket %s, want %s", p.SocketPath(), env.socketPath())
			}
			if fi, err := os.Stat(filepath.Dir(env.socketPath())); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("socket directory: %v, mode %v, want 0700", err, fi.Mode().Perm())
			}
			if fi, err := os.Lstat(env.socketPath()); err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
				t.Errorf("socket: %v, mode %v, want a 0600 socket", err, fi.Mode())
			}
			if fi, err := os.Stat(env.sessionsDir()); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("sessions directory: %v, want 0700", err)
			}

			// The key file: its name, 0600, exactly three fields.
			if p.KeyPath() != env.keyPath() {
				t.Errorf("key file %s, want %s", p.KeyPath(), env.keyPath())
			}
			if fi, err := os.Lstat(env.keyPath()); err != nil || fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
				t.Fatalf("key file: %v, want a regular 0600 file", err)
			}
			var key map[string]any
			if err := json.Unmarshal(mustRead(t, env.keyPath()), &key); err != nil {
				t.Fatal(err)
			}
			wantKey := map[string]any{"peerToken": key["peerToken"], "procStart": procStart, "pidDomain": pidDomain}
			if fmt.Sprint(key) != fmt.Sprint(wantKey) {
				t.Errorf("key file = %v, want %v (and no childToken: the real CLI keeps it out)", key, wantKey)
			}
			peerToken, _ := key["peerToken"].(string)
			if !hex32.MatchString(peerToken) {
				t.Errorf("peerToken %q is not 32 lowercase hex", peerToken)
			}
			if !hex32.MatchString(p.ChildToken()) || p.ChildToken() == peerToken {
				t.Errorf("childToken %q: want 32 lowercase hex, other than the peerToken", p.ChildToken())
			}

			// The registry entry: the real CLI's field set, with our values.
			if p.RegistryPath() != env.entryPath() {
				t.Errorf("registry entry %s, want %s", p.RegistryPath(), env.entryPath())
			}
			if fi, err := os.Lstat(env.entryPath()); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("registry entry: %v, want 0600", err)
			}
			var e map[string]any
			if err := json.Unmarshal(mustRead(t, env.entryPath()), &e); err != nil {
				t.Fatal(err)
			}
			// interop/FINDINGS.md §1: the fields the real CLI writes (bridgeSessionId
			// only with Remote Control on).
			wantFields := []string{"pid", "sessionId", "cwd", "startedAt", "procStart", "version",
				"peerProtocol", "peerFeatures", "kind", "entrypoint", "pidDomain", "messagingSocketPath",
				"name", "nameSource", "nameSince", "status", "updatedAt", "statusUpdatedAt"}
			var got []string
			for k := range e {
				got = append(got, k)
			}
			slices.Sort(got)
			slices.Sort(wantFields)
			if !slices.Equal(got, wantFields) {
				t.Errorf("entry fields = %v\nwant %v", got, wantFields)
			}
			uuid4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
			checks := []struct {
				field string
				ok    bool
			}{
				{"pid", e["pid"] == float64(os.Getpid())},
				{"sessionId", e["sessionId"] == p.SessionID() && uuid4.MatchString(p.SessionID())},
				{"cwd", e["cwd"] == "/work/x"},
				{"procStart", e["procStart"] == procStart},
				{"pidDomain", e["pidDomain"] == pidDomain},
				{"version", e["version"] == "1.2.3"},
				{"peerProtocol", e["peerProtocol"] == float64(1)},
				{"peerFeatures", fmt.Sprint(e["peerFeatures"]) == "[notify_idle reply_across_default_dirs]"},
				{"kind", e["kind"] == KindGateway},
				{"entrypoint", e["entrypoint"] == "gateway"},
				{"messagingSocketPath", e["messagingSocketPath"] == env.socketPath()},
				{"name", e["name"] == tt.wantName},
				{"nameSource", e["nameSource"] == "user"},
				{"status", e["status"] == "idle"},
			}
			for _, c := range checks {
				if !c.ok {
					t.Errorf("entry field %s = %v", c.field, e[c.field])
				}
			}
			for _, f := range []string{"startedAt", "nameSince", "updatedAt", "statusUpdatedAt"} {
				if ms, ok := e[f].(float64); !ok || ms < 1e12 || ms != float64(int64(ms)) {
					t.Errorf("entry field %s = %v, want Unix milliseconds", f, e[f])
				}
			}
			// The package reads back what it wrote.
			if pe, err := ParseEntry(mustRead(t, env.entryPath())); err != nil || pe.Name != tt.wantName || pe.MessagingSocketPath != env.socketPath() {
				t.Errorf("ParseEntry of our own entry = %+v, %v", pe, err)
			}

			// Shutdown removes all three and leaves the directories.
			stop()
			assertGone(t, env.socketPath(), "socket")
			assertGone(t, env.keyPath(), "key file")
			assertGone(t, env.entryPath(), "registry entry")
			if _, err := os.Stat(env.sessionsDir()); err != nil {
				t.Errorf("the sessions directory went too: %v", err)
			}
		})
	}
}

func TestRegisterWithoutVersionStillWritesOne(t *testing.T) {
	env := newRegEnv(t)
	p, err := Register(env.config())
	if err != nil {
		t.Fatal(err)
	}
	serveT(t, p)
	var e map[string]any
	if err := json.Unmarshal(mustRead(t, env.entryPath()), &e); err != nil {
		t.Fatal(err)
	}
	if v, ok := e["version"].(string); !ok || v == "" {
		t.Fatalf("version = %v, want a non-empty string", e["version"])
	}
}

func TestRegisterFallsBackToTmpForALongSocketPath(t *testing.T) {
	env := newRegEnv(t)
	long := filepath.Join(t.TempDir(), strings.Repeat("r", 90))
	if err := os.MkdirAll(long, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := env.config()
	cfg.RuntimeDir = long
	p, err := Register(cfg)
	if err != nil {
		t.Fatal(err)
	}
	serveT(t, p)
	want := filepath.Join(env.tmpDir, fmt.Sprintf("cc-socks-%d", os.Geteuid()), strconv.Itoa(os.Getpid())+".sock")
	if p.SocketPath() != want {
		t.Fatalf("socket %s, want %s", p.SocketPath(), want)
	}
	if _, err := os.Stat(filepath.Join(long, "cc-socks")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("cc-socks was created under the runtime dir anyway: %v", err)
	}
	sum := sha256.Sum256([]byte(want))
	key := filepath.Join(env.sessionsDir(), fmt.Sprintf("%d.%x.key", os.Getpid(), sum))
	if _, err := os.Stat(key); err != nil {
		t.Errorf("key file not named for the fallback socket: %v", err)
	}
}

// TestRegisterNeverTouchesAnotherLiveProcessesFiles: when a claim is
// refused, Register fails and leaves the other process's files byte for byte,
// and leaves nothing of its own behind.
func TestRegisterNeverTouchesAnotherLiveProcessesFiles(t *testing.T) {
	pid := os.Getpid()
	record := func(procStart, pidDomain string) []byte {
		b, _ := json.Marshal(map[string]any{"pid": pid, "sessionId": "other", "procStart": procStart,
			"pidDomain": pidDomain, "messagingSocketPath": "/elsewhere/1.sock", "name": "other"})
		return b
	}
	keyRecord := func(procStart, pidDomain string) []byte {
		b, _ := json.Marshal(map[string]any{"peerToken": strings.Repeat("ab", 16), "procStart": procStart, "pidDomain": pidDomain})
		return b
	}
	foreign := "linux:0123456789abcdef0123456789abcdef:pid:[4026531999]"
	tests := []struct {
		name  string
		entry func(t *testing.T) []byte // nil: no entry there
		key   func(t *testing.T) []byte // nil: no key file there
	}{
		{"an entry of a process with our pid in another pid namespace",
			func(*testing.T) []byte { return record("1", foreign) }, nil},
		{"a key file of a process with our pid in another pid namespace",
			nil, func(*testing.T) []byte { return keyRecord("1", foreign) }},
		{"an entry and key file of a live process with our start time",
			func(t *testing.T) []byte { return record(ownProcStart(t), ownPidDomain(t)) },
			func(t *testing.T) []byte { return keyRecord(ownProcStart(t), ownPidDomain(t)) }},
		{"an entry with our start time and no key file yet",
			func(t *testing.T) []byte { return record(ownProcStart(t), ownPidDomain(t)) }, nil},
		{"a key file with our start time and no entry",
			nil, func(t *testing.T) []byte { return keyRecord(ownProcStart(t), ownPidDomain(t)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newRegEnv(t)
			var entry, key []byte
			if tt.entry != nil {
				entry = tt.entry(t)
				writeRaw(t, env.entryPath(), entry)
			}
			if tt.key != nil {
				key = tt.key(t)
				writeRaw(t, env.keyPath(), key)
			}
			p, err := Register(env.config())
			if err == nil {
				serveT(t, p)
				t.Fatal("Register succeeded over another live process's file")
			}
			if !errors.Is(err, ErrLiveOwner) {
				t.Errorf("err = %v, want ErrLiveOwner", err)
			}
			if entry != nil {
				if got := mustRead(t, env.entryPath()); !bytes.Equal(got, entry) {
					t.Errorf("the other process's entry changed:\n%s\nwas\n%s", got, entry)
				}
			} else {
				assertGone(t, env.entryPath(), "our registry entry")
			}
			if key != nil {
				if got := mustRead(t, env.keyPath()); !bytes.Equal(got, key) {
					t.Errorf("the other process's key file changed:\n%s\nwas\n%s", got, key)
				}
			} else {
				assertGone(t, env.keyPath(), "our key file")
			}
			assertGone(t, env.socketPath(), "our socket")
		})
	}
}

func TestRegisteringTwiceLeavesTheFirstRegistrationAlone(t *testing.T) {
	tests := []struct {
		name        string
		sameRuntime bool // same socket path, or another one (so only the entry collides)
	}{
		{"a second registration on the same socket path is refused", true},
		{"a second registration on another socket path is refused at the registry entry", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newRegEnv(t)
			first, err := Register(env.config())
			if err != nil {
				t.Fatal(err)
			}
			serveT(t, first)
			entry, key := mustRead(t, env.entryPath()), mustRead(t, env.keyPath())

			env2 := env
			if !tt.sameRuntime {
				env2 = newRegEnv(t)
				env2.configDir = env.configDir
			}
			second, err := Register(env2.config())
			if err == nil {
				serveT(t, second)
				t.Fatal("a second registration of this process succeeded")
			}
			if !tt.sameRuntime && !errors.Is(err, ErrLiveOwner) {
				t.Errorf("err = %v, want ErrLiveOwner", err)
			}
			if got := mustRead(t, env.entryPath()); !bytes.Equal(got, entry) {
				t.Errorf("the first registration's entry changed")
			}
			if got := mustRead(t, env.keyPath()); !bytes.Equal(got, key) {
				t.Errorf("the first registration's key file changed")
			}
			if !tt.sameRuntime {
				assertGone(t, env2.keyPath(), "the refused registration's key file")
				assertGone(t, env2.socketPath(), "the refused registration's socket")
			}
			c, err := net.Dial("unix", env.socketPath())
			if err != nil {
				t.Fatalf("the first registration's socket no longer answers: %v", err)
			}
			c.Close()
		})
	}
}

func TestRegisterReplacesFilesOfADeadEarlierHolderOfOurPid(t *testing.T) {
	tests := []struct {
		name  string
		entry bool
		key   bool
		body  func(t *testing.T) []byte
	}{
		{"an entry and key file with our pid domain and another start time",
			true, true, func(t *testing.T) []byte {
				return []byte(`{"pid":` + strconv.Itoa(os.Getpid()) + `,"peerToken":"` + strings.Repeat("cd", 16) + `","procStart":"1","pidDomain":"` + ownPidDomain(t) + `"}`)
			}},
		{"an entry without pid domain (an older writer)",
			true, false, func(*testing.T) []byte { return []byte(`{"pid":` + strconv.Itoa(os.Getpid()) + `,"procStart":"1"}`) }},
		{"an entry that is not JSON", true, false, func(*testing.T) []byte { return []byte("torn") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newRegEnv(t)
			old := tt.body(t)
			if tt.entry {
				writeRaw(t, env.entryPath(), old)
			}
			if tt.key {
				writeRaw(t, env.keyPath(), old)
			}
			p, err := Register(env.config())
			if err != nil {
				t.Fatalf("Register: %v", err)
			}
			serveT(t, p)
			e, err := ParseEntry(mustRead(t, env.entryPath()))
			if err != nil || e.SessionID != p.SessionID() {
				t.Errorf("the entry is not ours: %+v, %v", e, err)
			}
			k, err := ParseKeyFile(mustRead(t, env.keyPath()))
			if err != nil || k.PeerToken == strings.Repeat("cd", 16) {
				t.Errorf("the key file is not ours: %+v, %v", k, err)
			}
		})
	}
}

func TestRegisterRefusesASymlinkInPlaceOfItsFiles(t *testing.T) {
	for _, which := range []string{"registry entry", "key file"} {
		t.Run("a symlink at the "+which+" is left alone", func(t *testing.T) {
			env := newRegEnv(t)
			target := filepath.Join(t.TempDir(), "target")
			writeRaw(t, target, []byte("keep"))
			link := env.entryPath()
			if which == "key file" {
				link = env.keyPath()
			}
			if err := os.MkdirAll(env.sessionsDir(), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			p, err := Register(env.config())
			if err == nil {
				serveT(t, p)
				t.Fatal("Register wrote through or over a symlink")
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("the symlink is gone: %v", err)
			}
			if got := mustRead(t, target); string(got) != "keep" {
				t.Errorf("the symlink's target now holds %q", got)
			}
		})
	}
}

// privDir is a 0700 directory, as the file helpers insist on.
func privDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// claimLeg is just enough of a Leg for claimFile.
func claimLeg(t *testing.T) *Leg {
	return &Leg{log: slog.New(slog.DiscardHandler), procStart: ownProcStart(t), pidDomain: ownPidDomain(t)}
}

func rec(procStart, pidDomain string) []byte {
	b, _ := json.Marshal(map[string]string{"procStart": procStart, "pidDomain": pidDomain})
	return b
}

func TestConfigDirFollowsTheRealCLI(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name, env, want string
	}{
		{"CLAUDE_CONFIG_DIR wins when set", "/x/claude-config", "/x/claude-config"},
		{"otherwise ~/.claude", "", filepath.Join(home, ".claude")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HOME", home)
			t.Setenv("CLAUDE_CONFIG_DIR", tt.env)
			if got, err := ConfigDir(); err != nil || got != tt.want {
				t.Fatalf("ConfigDir() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestRegisterPlacesFilesWhereTheRealCLIDoes(t *testing.T) {
	t.Run("without a config dir the entry goes to $CLAUDE_CONFIG_DIR/sessions", func(t *testing.T) {
		env := newRegEnv(t)
		t.Setenv("CLAUDE_CONFIG_DIR", env.configDir)
		cfg := env.config()
		cfg.ConfigDir = ""
		p, err := Register(cfg)
		if err != nil {
			t.Fatal(err)
		}
		serveT(t, p)
		if p.RegistryPath() != env.entryPath() {
			t.Fatalf("entry at %s, want %s", p.RegistryPath(), env.entryPath())
		}
		if _, err := os.Stat(env.keyPath()); err != nil {
			t.Fatalf("key file: %v", err)
		}
	})
	t.Run("without a runtime dir the socket goes to <tmp>/cc-socks/<pid>.sock", func(t *testing.T) {
		env := newRegEnv(t)
		cfg := env.config()
		cfg.RuntimeDir = ""
		p, err := Register(cfg)
		if err != nil {
			t.Fatal(err)
		}
		serveT(t, p)
		want := filepath.Join(env.tmpDir, "cc-socks", strconv.Itoa(os.Getpid())+".sock")
		if p.SocketPath() != want {
			t.Fatalf("socket %s, want %s", p.SocketPath(), want)
		}
		if fi, err := os.Lstat(want); err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
			t.Fatalf("socket: %v", err)
		}
	})
}
