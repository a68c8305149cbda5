package addressing

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscapePath(t *testing.T) {
	tests := []struct {
		name, path, want string
	}{
		{"a plain cc-socks path is left alone", "/tmp/cc-socks/42.sock", "/tmp/cc-socks/42.sock"},
		{"a space becomes %20", "/run/user/0/my dir/cc-socks/1.sock", "/run/user/0/my%20dir/cc-socks/1.sock"},
		{"a percent sign becomes %25", "/tmp/100%/1.sock", "/tmp/100%25/1.sock"},
		{"each UTF-8 byte is encoded in upper-case hex", "/tmp/é.sock", "/tmp/%C3%A9.sock"},
		{"colon, underscore, dot, hyphen and backslash are kept", `/a:b_c.d-e\f`, `/a:b_c.d-e\f`},
		{"quotes and brackets are encoded", `/"<[x]>"`, `/%22%3C%5Bx%5D%3E%22`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EscapePath(tt.path); got != tt.want {
				t.Fatalf("EscapePath(%q) = %q, want %q", tt.path, got, tt.want)
			}
			if got := UnescapePath(tt.want); got != tt.path {
				t.Fatalf("UnescapePath(%q) = %q, want %q", tt.want, got, tt.path)
			}
		})
	}
}

func TestUnescapePathFallsBackLikeDecodeURIComponent(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"a lone percent sign keeps the text as written", "/tmp/100%/1.sock", "/tmp/100%/1.sock"},
		{"a percent sign at the end keeps the text", "/tmp/a%2", "/tmp/a%2"},
		{"a non-hex escape keeps the text", "/tmp/%zz/%20", "/tmp/%zz/%20"},
		{"escapes that decode to invalid UTF-8 keep the text", "/tmp/%FF/%20", "/tmp/%FF/%20"},
		{"lower-case hex is decoded", "/tmp/%c3%a9", "/tmp/é"},
		{"reserved characters are decoded too", "/tmp/%2F%3A", "/tmp//:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UnescapePath(tt.in); got != tt.want {
				t.Fatalf("UnescapePath(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSocketOf(t *testing.T) {
	if p, ok := SocketOf("uds:/tmp/a%20b/1.sock"); !ok || p != "/tmp/a b/1.sock" {
		t.Fatalf("SocketOf = %q, %v", p, ok)
	}
	if _, ok := SocketOf("bridge:x"); ok {
		t.Fatal("a bridge address read as a socket")
	}
	if got := UDS("/tmp/a b/1.sock"); got != "uds:/tmp/a%20b/1.sock" {
		t.Fatalf("UDS = %q", got)
	}
}

func FuzzEscapePath(f *testing.F) {
	for _, s := range []string{"/tmp/cc-socks/1.sock", "/a b/%", "/é/%25", "%", "%%41", `\x`, "/%C3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := EscapePath(s)
		for i := range len(e) {
			if !pathSafeByte(e[i]) && e[i] != '%' {
				t.Fatalf("EscapePath(%q) = %q keeps byte %q", s, e, e[i])
			}
		}
		if utf8.ValidString(s) {
			if got := UnescapePath(e); got != s {
				t.Fatalf("UnescapePath(EscapePath(%q)) = %q", s, got)
			}
		}
		if u := UnescapePath(s); !strings.Contains(s, "%") && u != s {
			t.Fatalf("UnescapePath changed %q without escapes into %q", s, u)
		}
	})
}
