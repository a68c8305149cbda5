package claude

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
)

// unixSock is one row of /proc/net/unix.
type unixSock struct {
	inode     uint64
	listening bool
	path      string // as bound: "" for none, a leading NUL for an abstract name
}

// netUnixTable prints socks as the kernel's unix_seq_show does: the path
// after one space, byte for byte but NUL as '@', nothing escaped.
func netUnixTable(socks []unixSock) string {
	var b strings.Builder
	b.WriteString("Num       RefCount Protocol Flags    Type St Inode Path\n")
	for _, s := range socks {
		flags, st := 0, 3
		if s.listening {
			flags, st = acceptCon, 1
		}
		fmt.Fprintf(&b, "%016x: %08X %08X %08X %04X %02X %5d", 0, 2, 0, flags, 1, st, s.inode)
		if s.path != "" {
			b.WriteString(" " + printedPath(s.path))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// printedPath is path as /proc/net/unix shows it: a file's path ends at
// its first NUL (bind reads it as a C string); an abstract name is all its
// bytes, each NUL shown as '@'.
func printedPath(path string) string {
	if !strings.HasPrefix(path, "\x00") {
		path, _, _ = strings.Cut(path, "\x00")
	}
	return strings.ReplaceAll(path, "\x00", "@")
}

func TestParseNetUnixFindsOnlyThePathItself(t *testing.T) {
	const path = "/tmp/cc-socks/1.sock"
	tests := []struct {
		name  string
		socks []unixSock
		want  []uint64
	}{
		{"the listener bound at the path is found", []unixSock{{1, true, path}}, []uint64{1}},
		{"a connection accepted on it is not a listener", []unixSock{{1, false, path}}, nil},
		{"a path with a space in it is read whole", []unixSock{{1, true, "/tmp/a b/1.sock"}, {2, true, path}}, []uint64{2}},
		{"a path with a carriage return after it is another path", []unixSock{{1, true, path + "\r"}}, nil},
		{"a path with spaces before it is another path", []unixSock{{1, true, "  " + path}}, nil},
		{"a path with a tab before it is another path", []unixSock{{1, true, "\t" + path}}, nil},
		{"an abstract name spelled like the path is another", []unixSock{{1, true, "\x00" + path[1:]}}, nil},
		{"a socket bound nowhere is skipped", []unixSock{{1, true, ""}, {2, true, path}}, []uint64{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseNetUnix(strings.NewReader(netUnixTable(tt.socks)), path)
			want := map[string]bool{}
			for _, ino := range tt.want {
				want[strconv.FormatUint(ino, 10)] = true
			}
			if !maps.Equal(got, want) {
				t.Fatalf("inodes %v, want %v", got, want)
			}
		})
	}
}

// FuzzParseNetUnix: in a table the kernel printed, the listeners found
// for a path are exactly those bound at that path, whatever bytes the
// other sockets' paths hold (but a newline: see parseNetUnix); any input
// never panics it, and an inode it returns is a field of the input.
func FuzzParseNetUnix(f *testing.F) {
	f.Add("/tmp/cc-socks/1.sock\n/tmp/cc-socks/1.sock\r\n /tmp/cc-socks/1.sock\n/tmp/a b/2.sock", uint64(0b1111), []byte(netUnixTable([]unixSock{{7, true, "/x"}})))
	f.Add("/r\n\x00/r\n/r \n", uint64(0b1111), []byte("Num\n0: 1 2 10000 4 5 6  /r\n"))
	f.Add("/\n\n", uint64(3), []byte("\n\n\n"))
	f.Fuzz(func(t *testing.T, paths string, listening uint64, raw []byte) {
		if got := parseNetUnix(strings.NewReader(string(raw)), "/x"); len(got) > 0 {
			for ino := range got {
				if ino == "" || !strings.Contains(string(raw), ino) {
					t.Fatalf("inode %q is not a field of %q", ino, raw)
				}
			}
		}
		ps := strings.Split(paths, "\n")
		target := ps[0]
		if !strings.HasPrefix(target, "/") || strings.Contains(target, "\x00") || len(ps) > 64 {
			return // what the leg verifies is a file's absolute path
		}
		socks := make([]unixSock, len(ps))
		want := map[string]bool{}
		for i, p := range ps {
			socks[i] = unixSock{inode: uint64(100 + i), listening: listening>>i&1 == 1, path: p}
			if socks[i].listening && printedPath(p) == target && p[0] != 0 {
				want[strconv.Itoa(100+i)] = true
			}
		}
		if got := parseNetUnix(strings.NewReader(netUnixTable(socks)), target); !maps.Equal(got, want) {
			t.Fatalf("listeners at %q: %v, want %v in\n%s", target, got, want, netUnixTable(socks))
		}
	})
}
