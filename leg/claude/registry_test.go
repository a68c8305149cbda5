package claude

import (
	"bytes"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseEntry(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr bool
		check   func(Entry) bool
	}{
		{"a real entry parses", `{"pid":42,"sessionId":"s","procStart":"123","messagingSocketPath":"/tmp/cc-socks/42.sock","name":"work","status":"busy","nameSource":"user"}`, false,
			func(e Entry) bool { return e.PID == 42 && e.Name == "work" && e.Status == "busy" }},
		{"an unknown status reads as empty", `{"pid":42,"status":"exploding"}`, false, func(e Entry) bool { return e.Status == "" }},
		{"an unknown name source reads as empty", `{"pid":42,"nameSource":"hacker"}`, false, func(e Entry) bool { return e.NameSource == "" }},
		{"unknown fields are ignored", `{"pid":42,"future":{"x":1}}`, false, func(e Entry) bool { return e.PID == 42 }},
		{"keys match exactly, not folded by case", `{"pid":42,"proCStArt":"9","Name":"x"}`, false,
			func(e Entry) bool { return e.ProcStart == "" && !e.hasProcStart && e.Name == "" }},
		{"a field of the wrong type reads as absent", `{"pid":42,"name":5,"procStart":123,"startedAt":"x","peerFeatures":"notify_idle","peerProtocol":"1"}`, false,
			func(e Entry) bool {
				return e.Name == "" && e.ProcStart == "" && !e.hasProcStart && e.StartedAt == 0 && e.PeerFeatures == nil && e.PeerProtocol == 0
			}},
		{"peer features keep only strings", `{"pid":42,"peerFeatures":["notify_idle",3,"artifact_yield"]}`, false,
			func(e Entry) bool { return slices.Equal(e.PeerFeatures, []string{"notify_idle", "artifact_yield"}) }},
		{"numbers and strings are read", `{"pid":42,"startedAt":1795980851827,"peerProtocol":1,"cwd":"/w","kind":"gateway-alias"}`, false,
			func(e Entry) bool {
				return e.StartedAt == 1795980851827 && e.PeerProtocol == 1 && e.Cwd == "/w" && e.Kind == KindAlias
			}},
		{"the shell status is known", `{"pid":42,"status":"shell"}`, false, func(e Entry) bool { return e.Status == "shell" }},
		{"a peer-given name source is known", `{"pid":42,"nameSource":"peer"}`, false, func(e Entry) bool { return e.NameSource == "peer" }},
		{"the last of duplicate keys wins, as in JSON.parse", `{"pid":42,"name":"a","name":"b"}`, false, func(e Entry) bool { return e.Name == "b" }},
		{"null is not an entry", `null`, true, nil},
		{"an array is not an entry", `[{"pid":42}]`, true, nil},
		{"no pid is an error", `{"sessionId":"s"}`, true, nil},
		{"a negative pid is an error", `{"pid":-3}`, true, nil},
		{"a pid of the wrong type is an error", `{"pid":"42"}`, true, nil},
		{"not JSON is an error", `pid=42`, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ParseEntry([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && !tt.check(e) {
				t.Fatalf("entry = %+v", e)
			}
		})
	}
}

func FuzzParseEntry(f *testing.F) {
	f.Add([]byte(`{"pid":42,"sessionId":"s","procStart":"123","messagingSocketPath":"/tmp/cc-socks/42.sock"}`))
	f.Add([]byte(`{"peerToken":"00","procStart":"1","pidDomain":"linux:x:pid:[1]"}`))
	f.Add([]byte(`{"pid":7,"procStart":"","pidDomain":null,"spare":true,"parkedJobId":""}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if e, err := ParseEntry(b); err == nil {
			if e.PID <= 0 {
				t.Fatalf("accepted pid %d", e.PID)
			}
			// An absent field can only read as empty.
			if (!e.hasProcStart && e.ProcStart != "") || (!e.hasPidDomain && e.PidDomain != "") {
				t.Fatalf("a non-empty field read as absent: %+v", e)
			}
		}
		if k, err := ParseKeyFile(b); err == nil && k.PeerToken == "" {
			t.Fatal("accepted a key without a token")
		}
	})
}

func TestEntryFileNames(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"42.json", true}, {"42-deadbeef.json", false}, {"x.json", false}, {".json", false},
		{"42.json.tmp", false}, {"0.json", false}, {"42.key", false}, {"042.json", false},
		{"99999999999999999999.json", false},
	}
	for _, tt := range tests {
		if _, ok := entryPID(tt.name); ok != tt.ok {
			t.Errorf("entryPID(%q) ok = %v, want %v", tt.name, ok, tt.ok)
		}
	}
}

func TestSocketPathFallsBackWhenTooLong(t *testing.T) {
	long := "/" + strings.Repeat("r", 100)
	tests := []struct {
		name, runtime, want string
	}{
		{"XDG_RUNTIME_DIR is used when set", "/run/user/0", "/run/user/0/cc-socks/7.sock"},
		{"no XDG_RUNTIME_DIR means /tmp/cc-socks", "", "/tmp/cc-socks/7.sock"},
		{"a path over 103 bytes falls back to /tmp/cc-socks-<uid>", long, "/tmp/cc-socks-5/7.sock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SocketPath(tt.runtime, "", 7, 5); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestReplyPathRules(t *testing.T) {
	allowed := ReplyDirs(0, "/run/user/0", "/tmp")
	tests := []struct {
		name string
		path string
		ok   bool
	}{
		{"a pid socket in /tmp/cc-socks", "/tmp/cc-socks/42.sock", true},
		{"a pid-hex socket in the runtime dir", "/run/user/0/cc-socks/42-deadbeef.sock", true},
		{"a short hex socket next to ours", "/own/abc.sock", true},
		{"a socket elsewhere", "/home/x/42.sock", false},
		{"a name of the wrong shape", "/tmp/cc-socks/evil.sock", false},
		{"a relative path", "tmp/cc-socks/42.sock", false},
		{"a path with dot-dot", "/tmp/cc-socks/../cc-socks/42.sock", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := replyPathOK(tt.path, "/own", allowed); got != tt.ok {
				t.Fatalf("replyPathOK = %v, want %v", got, tt.ok)
			}
		})
	}
}

func TestSocketOwnership(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "1.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ok, err := socketOwnedBy(path, os.Getpid()); err != nil || !ok {
		t.Fatalf("our own listening socket not recognised: %v %v", ok, err)
	}
	if ok, _ := socketOwnedBy(path, os.Getppid()); ok {
		t.Fatal("our parent was said to own our socket")
	}
	if ok, _ := socketOwnedBy(filepath.Join(dir, "2.sock"), os.Getpid()); ok {
		t.Fatal("a socket that does not exist was said to be owned")
	}
}

func TestParseNetUnixReadsPathsWithSpaces(t *testing.T) {
	in := "Num       RefCount Protocol Flags    Type St Inode Path\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 111 /tmp/a b/1.sock\n" +
		"0000000000000000: 00000003 00000000 00000000 0001 03 222 /tmp/a b/1.sock\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 333 /tmp/other.sock\n" +
		"garbage\n"
	got := parseNetUnix(strings.NewReader(in), "/tmp/a b/1.sock")
	if len(got) != 1 || !got["111"] {
		t.Fatalf("inodes = %v, want only the listening 111", got)
	}
}

func TestClaimFile(t *testing.T) {
	p := claimLeg(t)
	ours := []byte(`{"ours":true}`)
	tests := []struct {
		name     string
		existing []byte // nil: nothing there
		wantErr  error  // nil: the claim succeeds and the file holds ours
	}{
		{"a new file is created", nil, nil},
		{"a file of a dead earlier holder of our pid (same pid domain, other start) is replaced", rec("1", p.pidDomain), nil},
		{"a file in the lstart spelling from our pid domain is replaced", rec("Mon Jan  1 00:00:00 2024", p.pidDomain), nil},
		{"a file without pid domain is replaced", []byte(`{"procStart":"1"}`), nil},
		{"a file that is not JSON is replaced", []byte("\x00garbage"), nil},
		{"a file of another pid namespace is refused", rec("1", "linux:m:pid:[1]"), ErrLiveOwner},
		{"a file of another pid namespace with our start time is refused", rec(p.procStart, "linux:m:pid:[1]"), ErrLiveOwner},
		{"a file of this very process is refused", rec(p.procStart, p.pidDomain), ErrLiveOwner},
		{"a file of another pid namespace with a numeric procStart is still refused", []byte(`{"procStart":7,"pidDomain":"linux:m:pid:[1]"}`), ErrLiveOwner},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(privDir(t), "42.json")
			if tt.existing != nil {
				writeRaw(t, path, tt.existing)
			}
			err := p.claimFile(path, ours)
			if tt.wantErr == nil && err != nil {
				t.Fatalf("claimFile: %v", err)
			}
			got := mustRead(t, path)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if !bytes.Equal(got, tt.existing) {
					t.Fatalf("the refused file changed to %q", got)
				}
				return
			}
			if !bytes.Equal(got, ours) {
				t.Fatalf("file holds %q, want ours", got)
			}
			if fi, _ := os.Lstat(path); fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", fi.Mode().Perm())
			}
		})
	}
}

func TestClaimFileRefusesWhatItCannotCheck(t *testing.T) {
	p := claimLeg(t)
	tests := []struct {
		name  string
		place func(t *testing.T, path string)
		check func(t *testing.T, path string)
	}{
		{"a symlink to a file is left pointing at an untouched file",
			func(t *testing.T, path string) {
				target := filepath.Join(filepath.Dir(path), "target")
				writeRaw(t, target, rec(p.procStart+"0", p.pidDomain))
				if err := os.Symlink(target, path); err != nil {
					t.Fatal(err)
				}
			},
			func(t *testing.T, path string) {
				if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
					t.Errorf("the symlink was replaced: %v", err)
				}
				if got := mustRead(t, filepath.Join(filepath.Dir(path), "target")); !bytes.Equal(got, rec(p.procStart+"0", p.pidDomain)) {
					t.Errorf("the symlink's target changed to %q", got)
				}
			}},
		{"a dangling symlink is left alone",
			func(t *testing.T, path string) {
				if err := os.Symlink("/nonexistent/x", path); err != nil {
					t.Fatal(err)
				}
			},
			func(t *testing.T, path string) {
				if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
					t.Errorf("the symlink was replaced: %v", err)
				}
			}},
		{"a file too large to be a record is left alone",
			func(t *testing.T, path string) {
				writeRaw(t, path, bytes.Repeat([]byte(" "), maxEntry+1))
			},
			func(t *testing.T, path string) {
				if fi, err := os.Lstat(path); err != nil || fi.Size() != maxEntry+1 {
					t.Errorf("the file was replaced: %v", err)
				}
			}},
		{"a directory is left alone",
			func(t *testing.T, path string) {
				if err := os.Mkdir(path, 0o700); err != nil {
					t.Fatal(err)
				}
			},
			func(t *testing.T, path string) {
				if fi, err := os.Lstat(path); err != nil || !fi.IsDir() {
					t.Errorf("the directory was replaced: %v", err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(privDir(t), "42.json")
			tt.place(t, path)
			if err := p.claimFile(path, []byte(`{"ours":true}`)); err == nil {
				t.Fatal("claimFile succeeded")
			}
			tt.check(t, path)
		})
	}
}

func TestSocketOwnershipIsCheckedAgainOnceTheSocketChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "1.sock")
	listen := func() *net.UnixListener {
		t.Helper()
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	owned := func(step string, want bool) {
		t.Helper()
		for range 2 { // a full check, then one on its proof
			if got, _ := socketOwnedBy(path, os.Getpid()); got != want {
				t.Fatalf("%s: owned = %v, want %v", step, got, want)
			}
		}
	}
	ln := listen()
	owned("listening", true)
	ln.SetUnlinkOnClose(false)
	ln.Close()
	owned("closed, its file left behind", false)
	os.Remove(path)
	ln = listen()
	defer ln.Close()
	owned("bound again", true)
	if got, _ := socketOwnedBy(path, os.Getppid()); got {
		t.Fatal("our parent was said to own our socket")
	}
}
