package qwen

import (
	"reflect"
	"strings"
	"testing"
)

func TestHomeDir(t *testing.T) {
	tests := []struct {
		name                     string
		qwenHome, home, cwd, tmp string
		want                     string
	}{
		{"unset is ~/.qwen", "", "/home/me", "/w", "/tmp", "/home/me/.qwen"},
		{"without a user home it is under the temp dir", "", "", "/w", "/var/tmp", "/var/tmp/.qwen"},
		{"an absolute QWEN_HOME is used as is", "/srv/q/", "/home/me", "/w", "/tmp", "/srv/q"},
		{"~ is the user home", "~", "/home/me", "/w", "/tmp", "/home/me"},
		{"~/x is under the user home", "~/x//y", "/home/me", "/w", "/tmp", "/home/me/x/y"},
		{`~\x is under the user home too`, `~\x\y`, "/home/me", "/w", "/tmp", "/home/me/x/y"},
		{"a relative QWEN_HOME is taken from the cwd", "q/../r", "/home/me", "/w", "/tmp", "/w/r"},
		{"~user is a relative name, not an expansion", "~bob", "/home/me", "/w", "/tmp", "/w/~bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HomeDir(tt.qwenHome, tt.home, tt.cwd, tt.tmp); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("sessions and controllers live in the home", func(t *testing.T) {
		if SessionsDir("/h") != "/h/sessions" || ControllersFile("/h") != "/h/peer-controllers.json" {
			t.Fatal("wrong paths")
		}
	})
}

func TestNodeTmpDir(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"TMPDIR wins", map[string]string{"TMPDIR": "/a/", "TMP": "/b"}, "/a"},
		{"then TMP", map[string]string{"TMP": "/b"}, "/b"},
		{"then TEMP", map[string]string{"TEMP": "/c"}, "/c"},
		{"else /tmp", nil, "/tmp"},
		{"a root TMPDIR keeps its slash", map[string]string{"TMPDIR": "/"}, "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NodeTmpDir(func(k string) string { return tt.env[k] }); got != tt.want {
				t.Fatalf("got %q", got)
			}
		})
	}
}

func TestInboxCandidates(t *testing.T) {
	nonce := "0123456789abcdef"
	t.Run("the runtime dir comes first, then the temp dir and /tmp with one nonce", func(t *testing.T) {
		got := InboxCandidates("/run/user/1000", "/var/tmp", 41337, nonce)
		want := []string{"/run/user/1000/qwen-socks/41337.sock", "/var/tmp/qwen-socks-" + nonce + "/41337.sock", "/tmp/qwen-socks-" + nonce + "/41337.sock"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("without a runtime dir and with TMPDIR=/tmp there is one candidate", func(t *testing.T) {
		got := InboxCandidates("", "/tmp", 7, nonce)
		if !reflect.DeepEqual(got, []string{"/tmp/qwen-socks-" + nonce + "/7.sock"}) {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("a candidate over 103 bytes is skipped, one of exactly 103 is kept", func(t *testing.T) {
		// Literal lengths, not the constant: the constant is what this checks.
		exact := "/" + strings.Repeat("r", 84) // + "/qwen-socks/1.sock" is 103 bytes
		got := InboxCandidates(exact, "/tmp", 1, nonce)
		if len(got) != 2 || len(got[0]) != 103 {
			t.Fatalf("got %v", got)
		}
		got = InboxCandidates(exact+"r", exact+"r", 1, nonce) // 104 bytes each
		if !reflect.DeepEqual(got, []string{"/tmp/qwen-socks-" + nonce + "/1.sock"}) {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("relative directories give no candidate", func(t *testing.T) {
		got := InboxCandidates("run", "tmp", 1, nonce)
		if !reflect.DeepEqual(got, []string{"/tmp/qwen-socks-" + nonce + "/1.sock"}) {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("a sibling name keeps the pid and adds a suffix", func(t *testing.T) {
		got, ok := SiblingSocketPath("/run/user/1/qwen-socks/41-deadbeef.sock", "0a0b0c0d")
		if !ok || got != "/run/user/1/qwen-socks/41-0a0b0c0d.sock" {
			t.Fatalf("got %q %v", got, ok)
		}
		dir := "/" + strings.Repeat("d", 85) // + "/41-0a0b0c0d.sock" is 103 bytes
		if got, ok := SiblingSocketPath(dir+"/41.sock", "0a0b0c0d"); !ok || len(got) != 103 {
			t.Fatalf("a 103-byte sibling was refused: %q %v", got, ok)
		}
		if got, ok := SiblingSocketPath(dir+"d/41.sock", "0a0b0c0d"); ok {
			t.Fatalf("a 104-byte sibling was offered: %q", got)
		}
	})
	t.Run("nonces and suffixes are fresh hex", func(t *testing.T) {
		if n := NewSocketNonce(); !isHexToken(n, 16) || n == NewSocketNonce() {
			t.Fatalf("nonce %q", n)
		}
		if s := NewSuffix(); !isHexToken(s, 8) {
			t.Fatalf("suffix %q", s)
		}
	})
}

func TestFileNames(t *testing.T) {
	records := []struct {
		name   string
		pid    int
		suffix string
		ok     bool
	}{
		{"41337.json", 41337, "", true},
		{"41337-0a1b2c3d.json", 41337, "0a1b2c3d", true},
		{"041337.json", 0, "", false},
		{"0.json", 0, "", false},
		{"41337-0A1B2C3D.json", 0, "", false},
		{"41337-0a1b2c3.json", 0, "", false},
		{"41337-.json", 0, "", false},
		{"-1.json", 0, "", false},
		{"41337.json.0123456789ab.tmp", 0, "", false},
		{"9007199254740991.json", 9007199254740991, "", true},
		{"9007199254740992.json", 0, "", false},
		{".json", 0, "", false},
	}
	for _, tt := range records {
		t.Run("record name "+tt.name, func(t *testing.T) {
			pid, suffix, ok := ParseRecordFileName(tt.name)
			if pid != tt.pid || suffix != tt.suffix || ok != tt.ok {
				t.Fatalf("got %d %q %v", pid, suffix, ok)
			}
			if ok && RecordFileName(pid, suffix) != tt.name {
				t.Fatalf("RecordFileName does not print it back")
			}
		})
	}
	sockets := []struct {
		name string
		pid  int
		ok   bool
	}{
		{"41.sock", 41, true}, {"041.sock", 41, true}, {"41-0a1b2c3d.sock", 41, true},
		{"41-zz.sock", 0, false}, {"0.sock", 0, false}, {"a.sock", 0, false}, {"41.json", 0, false},
	}
	for _, tt := range sockets {
		t.Run("socket name "+tt.name, func(t *testing.T) {
			pid, _, ok := ParseSocketFileName(tt.name)
			if pid != tt.pid || ok != tt.ok {
				t.Fatalf("got %d %v", pid, ok)
			}
		})
	}
	temps := map[string]bool{
		"41.json.0123456789ab.tmp": true, "41-0a1b2c3d.json.0123456789ab.tmp": true,
		"41.json.0123456789a.tmp": false, "x.json.0123456789ab.tmp": false, ".tmp-0011223344556677": false, "41.json": false,
	}
	for name, want := range temps {
		t.Run("temp name "+name, func(t *testing.T) {
			if IsTempFileName(name) != want {
				t.Fatalf("IsTempFileName = %v", !want)
			}
		})
	}
	t.Run("fallback directories are qwen-socks-<16 hex>", func(t *testing.T) {
		if !IsNonceDirName("qwen-socks-0123456789abcdef") || IsNonceDirName("qwen-socks") || IsNonceDirName("qwen-socks-0123") {
			t.Fatal("IsNonceDirName is wrong")
		}
	})
	t.Run("only absolute local paths are dialed", func(t *testing.T) {
		for p, want := range map[string]bool{"/a.sock": true, "a.sock": false, "": false, "//host/a": false, "/a\x00b": false} {
			if IsLocalIPCPath(p) != want {
				t.Errorf("IsLocalIPCPath(%q) = %v", p, !want)
			}
		}
	})
}

func TestNames(t *testing.T) {
	tests := []struct {
		name, chosen, cwd, sid, want string
	}{
		{"a chosen name is kept", "gateway", "/w", "s", "gateway"},
		{"a chosen name is flattened", " gate\u200bway\n", "/w", "s", "gate way"},
		{"a chosen name is cut to 40 code points", strings.Repeat("é", 45), "/w", "s", strings.Repeat("é", 39) + "…"},
		{"a blank name is derived from the cwd", " ", "/home/me/My Project!", "s", "My-Project-" + Ref("s")[:2]},
		{"the root cwd derives session", "", "/", "s", "session-" + Ref("s")[:2]},
		{"a long base name is cut to 32 code points", "", "/" + strings.Repeat("ab", 20), "s", strings.Repeat("ab", 16) + "-" + Ref("s")[:2]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SessionName(tt.chosen, tt.cwd, tt.sid); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
