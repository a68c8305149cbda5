package eventfmt

import (
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/message"
)

func TestCleanLeavesNoControlCharacterAndOneLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"hi\x1b]0;owned\x07\x1b[2K\r\n12:00:00 receipt 3f2a9c1e delivered", "hi]0;owned[2K 12:00:00 receipt 3f2a9c1e delivered"},
		{"a\u0085b\u009bc\x7fd", "abcd"},
		{"safe \u202Eevil\u202C and \u2066x\u2069", "safe evil and x"},
		{"tab\tand  spaces\v", "tab and spaces"},
		{"naïve — ünïcode", "naïve — ünïcode"},
	}
	for _, tt := range tests {
		if got := Clean(tt.in); got != tt.want {
			t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzClean(f *testing.F) {
	f.Add("hi\x1b]0;x\x07\r\nfake")
	f.Add("\u202E\xff\xfe")
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range Clean(s) {
			if r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) {
				t.Fatalf("Clean(%q) kept %U", s, r)
			}
		}
	})
}

func TestWatchLinesCannotBeForgedByAPeer(t *testing.T) {
	evil := "hi\x1b]0;owned\x07\x1b[2K\r\n12:00:00 receipt 3f2a9c1e delivered\u202E"
	for _, ev := range []message.Event{
		{Message: &message.Message{FromName: "w\x1b[31m\n", Body: evil, Attested: true}},
		{Held: &message.Held{Message: message.Message{ID: "m1", FromName: evil}, Reason: evil}},
		{Drop: &message.Drop{MsgID: "m1", From: evil}},
	} {
		l := Line(ev)
		if strings.ContainsAny(l, "\x1b\a\r\n\u202E") {
			t.Errorf("line %q kept a control character", l)
		}
	}
}
