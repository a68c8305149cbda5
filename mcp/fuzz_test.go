package mcp

import (
	"testing"
	"unicode/utf8"

	"github.com/sessiongateway/gateway/addressing"
)

// FuzzCleanName: whatever a client calls itself, its session name parses
// as a name (so it can be addressed), and so does its address.
func FuzzCleanName(f *testing.F) {
	for _, s := range []string{"", "claude-code", "Cursor Agent", "uds:/tmp/x.sock", "mcp:mcp:x", "did:web:x", " [evil] ", "a\x00b", "\xff\xfe", "/abs/path", "name:bridge:x", "- -"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		name := cleanName(in)
		if n := utf8.RuneCountInString(name); n == 0 || n > MaxNameLen {
			t.Fatalf("cleanName(%q) = %q: %d characters", in, name, n)
		}
		for _, s := range []string{name, AddressPrefix + name} {
			a, err := addressing.Parse(s)
			if err != nil || a.Kind != addressing.KindName {
				t.Fatalf("cleanName(%q) = %q: %q does not parse as a name: %v", in, name, s, err)
			}
		}
	})
}

// FuzzTranscriptSession never panics and gives back a non-empty session.
func FuzzTranscriptSession(f *testing.F) {
	for _, s := range []string{"gateway://remote/build-bot/transcript", "gateway://remote//transcript", "gateway://remote/%zz/transcript", "gateway://sessions"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		if s, ok := transcriptSession(uri); ok && s == "" {
			t.Fatalf("%q gave an empty session", uri)
		}
	})
}
