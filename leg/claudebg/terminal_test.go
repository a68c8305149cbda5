package claudebg

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestTerminalOutputIsShownAsPlainText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain text stays as it is", "pong from fake", "pong from fake"},
		{"colours and modes are removed", "\x1b[1m\x1b[38;5;174mbold\x1b[0m text\x1b[?2026h", "bold text"},
		{"a cursor move to a row starts a new line", "\x1b[Hfirst\x1b[2;1Hsecond", "first\nsecond"},
		{"a cursor move forward is a space", "a\x1b[3Cb", "a b"},
		{"a move to a column between words is a space (seen)", "\x1b[49m●\x1b[3G\x1b[39mpong\x1b[8Gfrom\x1b[13Gfake", "● pong from fake"},
		{"a move down a row is a new line", "a\x1b[2Bb", "a\nb"},
		{"a window title (OSC to BEL or ST) is removed", "\x1b]0;title\x07x\x1b]8;;http://e\x1b\\y", "xy"},
		{"CRLF is one newline and a lone CR starts a new line", "a\r\nb\rc", "a\nb\nc"},
		{"control characters and C1 controls are removed", "a\x00\x08b\u0085c\x7f", "abc"},
		{"invalid UTF-8 is removed", "a\xff\xfeb", "ab"},
		{"blank rows and trailing spaces go", "\n\n  a   \n\n\n\nb  \n\n", "  a\nb"},
		{"an unterminated escape runs to the end", "text\x1b[38;5", "text"},
		{"a two-byte escape is removed", "a\x1b(Bb\x1b=c", "abc"},
		{"the prompt line of a turn shows its text", "\x1b[2K\x1b[1G❯ third turn please\x1b[K", "❯ third turn please"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stripTerminal(tt.in); got != tt.want {
				t.Fatalf("stripTerminal(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzStripTerminalLeavesNoControlCharacter(f *testing.F) {
	f.Add("\x1b[1mhi\x1b[0m\r\n")
	f.Add("\x1b]0;t\x07\x1bP+q\x1b\\")
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range stripTerminal(s) {
			if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f || r == '\uFFFD' && !strings.ContainsRune(s, '\uFFFD') {
				t.Fatalf("stripTerminal(%q) kept %U", s, r)
			}
		}
	})
}

func TestTheConfigDirIsWhereTheDaemonLooks(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"CLAUDE_CONFIG_DIR wins", map[string]string{"CLAUDE_CONFIG_DIR": "/tmp/bgc/cfg", "HOME": "/h"}, "/tmp/bgc/cfg"},
		{"an empty CLAUDE_CONFIG_DIR is used as given (the cwd)", map[string]string{"CLAUDE_CONFIG_DIR": "", "HOME": "/h"}, ""},
		{"without it, ~/.claude", map[string]string{"HOME": "/tmp/bgh/home"}, "/tmp/bgh/home/.claude"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ConfigDir(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if err != nil || got != tt.want {
				t.Fatalf("ConfigDir = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestTheSocketPathIsTheOneTheRealDaemonBound(t *testing.T) {
	// FINDINGS-bg §1: HOME=/tmp/bgh/home bound .../6e118514/, and
	// CLAUDE_CONFIG_DIR=/tmp/bgc/cfg bound .../919a5e6f/.
	for dir, h := range map[string]string{"/tmp/bgh/home/.claude": "6e118514", "/tmp/bgc/cfg/": "919a5e6f", "/tmp/bgc/x/../cfg": "919a5e6f"} {
		got, err := SocketPath(dir)
		want := fmt.Sprintf("/tmp/cc-daemon-%d/%s/control.sock", os.Getuid(), h)
		if err != nil || got != want {
			t.Errorf("SocketPath(%q) = %q, %v; want %q", dir, got, err, want)
		}
	}
	// The CLI hashes the NFC form: a decomposed é finds the same socket.
	nfc, _ := SocketPath("/tmp/caf\u00e9")
	nfd, _ := SocketPath("/tmp/cafe\u0301")
	if nfc != nfd {
		t.Errorf("NFC %s and NFD %s differ", nfc, nfd)
	}
}

func TestALineFromTheDaemonIsCappedAndTheNextOneStillRead(t *testing.T) {
	long := strings.Repeat("x", MaxLine+1)
	r := bufio.NewReaderSize(strings.NewReader(long+"\n"+strings.Repeat("y", MaxLine)+"\nlast"), 64<<10)
	if _, err := readLine(r); !errors.Is(err, errLineTooLong) {
		t.Fatalf("a line over 1 MiB: %v", err)
	}
	if b, err := readLine(r); err != nil || len(b) != MaxLine {
		t.Fatalf("a line of exactly 1 MiB: %d bytes, %v", len(b), err)
	}
	if b, err := readLine(r); err != nil || string(b) != "last" {
		t.Fatalf("a last line with no newline: %q, %v", b, err)
	}
	if _, err := readLine(r); err == nil {
		t.Fatal("read past the end")
	}
}
