package uds

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// statLine prints a /proc/<pid>/stat line the way the kernel does, with the
// given comm and starttime (field 22) and plausible values elsewhere.
func statLine(pid int, comm string, start uint64) []byte {
	fields := make([]string, 0, 52)
	fields = append(fields, "S")          // 3 state
	for i := 4; i < statStartField; i++ { // 4..21
		fields = append(fields, strconv.Itoa(i)) // stand-ins, all numeric like the kernel's
	}
	fields = append(fields, strconv.FormatUint(start, 10)) // 22 starttime
	for i := statStartField + 1; i <= 52; i++ {
		fields = append(fields, "0")
	}
	return fmt.Appendf(nil, "%d (%s) %s\n", pid, comm, strings.Join(fields, " "))
}

func TestParseStatStartTicks(t *testing.T) {
	real := []byte("2769 (bash) S 2768 2769 2769 0 -1 4194560 1817 28416 0 7 1 1 20 6 20 0 1 0 14302 5124096 979 18446744073709551615 94476700610560 94476701399965 140734533897168 0 0 0 65536 4 1132560123 1 0 0 17 1 0 0 0 0 0 94476701633264 94476701681508 94477541228544 140734533905246 140734533905261 140734533905261 140734533906410 0\n")
	tests := []struct {
		name string
		in   []byte
		want uint64
		ok   bool
	}{
		{"a real line yields field 22", real, 14302, true},
		{"a comm with spaces does not shift the fields", statLine(7, "tmux: server", 99), 99, true},
		{"a comm with parentheses is cut at the last one", statLine(7, "a) (b) S 1 2 (", 42), 42, true},
		{"a comm that is one closing parenthesis works", statLine(7, ")", 5), 5, true},
		{"an empty comm works", statLine(7, "", 6), 6, true},
		{"the largest starttime parses", statLine(7, "x", 1<<64-1), 1<<64 - 1, true},
		{"a line cut before field 22 is refused", []byte("7 (x) S 1 2 3"), 0, false},
		{"a line without parentheses is refused", []byte("7 x S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22"), 0, false},
		{"a line without a pid is refused", bytes.TrimPrefix(statLine(7, "x", 1), []byte("7 ")), 0, false},
		{"a non-numeric starttime is refused", bytes.Replace(statLine(7, "x", 123456), []byte(" 123456 "), []byte(" 12x456 "), 1), 0, false},
		{"an empty input is refused", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatStartTicks(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("parseStatStartTicks(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
			}
		})
	}
}

// FuzzParseStatStartTicks prints a stat line around any comm and starttime
// and checks the parsers recover the starttime, the state and the parent
// pid; arbitrary bytes must never crash them.
func FuzzParseStatStartTicks(f *testing.F) {
	f.Add("bash", uint64(14302), []byte("1 (init) S 0 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 5 0 0"))
	f.Add("a) (b) S 1 2 (", uint64(0), []byte("1 ()) S"))
	f.Add("tmux: server\n", uint64(1<<64-1), []byte(")))((("))
	f.Add(")", uint64(7), []byte{})
	f.Fuzz(func(t *testing.T, comm string, start uint64, raw []byte) {
		_, _ = parseStatStartTicks(raw) // any answer, but no panic
		_, _, _ = parseStatState(raw)

		got, err := parseStatStartTicks(statLine(4242, comm, start))
		if err != nil || got != start {
			t.Fatalf("comm %q start %d: parsed %d, %v", comm, start, got, err)
		}
		if st, ppid, err := parseStatState(statLine(4242, comm, start)); err != nil || st != 'S' || ppid != 4 {
			t.Fatalf("comm %q: state %q, ppid %d, %v; want S, 4", comm, st, ppid, err)
		}
	})
}

func TestParseBtime(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int64
		ok   bool
	}{
		{"btime is found after a long intr line", "cpu  1 2 3\nintr " + strings.Repeat("0 ", 100_000) + "\nctxt 5\nbtime 1795980557\nprocesses 9\n", 1795980557, true},
		{"a missing btime is an error", "cpu 1\nctxt 5\n", 0, false},
		{"a malformed btime is an error", "btime soon\n", 0, false},
		{"a negative btime is an error", "btime -5\n", 0, false},
		{"a prefix is not a match", "btimex 5\nbtime 6\n", 6, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseBtime([]byte(tt.in))
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("parseBtime = %d, %v; want %d, ok=%v", got, err, tt.want, tt.ok)
			}
		})
	}
}

// FuzzParseBtime: junk lines before the btime line of /proc/stat do not
// hide it, nor before the NSpid line of /proc/<pid>/status; any input
// never crashes either parser.
func FuzzParseBtime(f *testing.F) {
	f.Add([]byte("cpu 1\nbtime 1795980557\n"), int64(1795980557))
	f.Add([]byte("btime \n"), int64(0))
	f.Fuzz(func(t *testing.T, raw []byte, btime int64) {
		_, _ = parseBtime(raw)
		_, _ = parseNSpid(raw)
		if btime < 0 {
			return
		}
		// Any junk before it, on lines of its own, does not hide our line.
		// Each junk line starts with '#', so none of them is a btime line.
		junk := append([]byte("#"), bytes.ReplaceAll(raw, []byte("\n"), []byte("\n#"))...)
		in := fmt.Appendf(junk, "\nbtime %d\n", btime)
		if got, err := parseBtime(in); err != nil || got != btime {
			t.Fatalf("parseBtime(%q) = %d, %v; want %d", in, got, err, btime)
		}
		if btime == 0 {
			return
		}
		in = fmt.Appendf(junk, "\nNSpid:\t7\t%d\n", btime)
		if got, err := parseNSpid(in); err != nil || int64(got) != btime {
			t.Fatalf("parseNSpid(%q) = %d, %v; want %d", in, got, err, btime)
		}
	})
}

func TestParseNSLink(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"pid:[4026531836]", 4026531836, true},
		{"net:[4026531836]", 0, false},
		{"pid:[]", 0, false},
		{"pid:[12", 0, false},
		{"pid:[-1]", 0, false},
		{"pid:[", 0, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q is ok=%v", tt.in, tt.ok), func(t *testing.T) {
			got, err := parseNSLink("pid", tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("parseNSLink = %d, %v", got, err)
			}
		})
	}
}

func FuzzParseNSLink(f *testing.F) {
	f.Add("pid:[4026531836]")
	f.Add("pid:[")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseNSLink("pid", s)
		if err != nil {
			return
		}
		// Whatever parses must print back to a link that parses the same.
		if again, err := parseNSLink("pid", fmt.Sprintf("pid:[%d]", v)); err != nil || again != v {
			t.Fatalf("%q parsed to %d, which does not round-trip", s, v)
		}
	})
}

func TestFormatLstart(t *testing.T) {
	tests := []struct {
		name  string
		btime int64
		ticks uint64
		hz    uint64
		want  string
	}{
		{"a single-digit day is padded with a space, as asctime does", 1136214245, 0, 100, "Mon Jan  2 15:04:05 2006"},
		{"a two-digit day is not padded", 1795980557, 14302, 100, "Sun Nov 29 19:31:40 2026"},
		{"fractions of a second are truncated, as ps does", 1136214245, 199, 100, "Mon Jan  2 15:04:06 2006"},
		{"the time is UTC whatever the local zone", 0, 0, 100, "Thu Jan  1 00:00:00 1970"},
		{"another CLK_TCK scales the ticks", 1136214245, 2500, 250, "Mon Jan  2 15:04:15 2006"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatLstart(tt.btime, tt.ticks, tt.hz); got != tt.want {
				t.Errorf("formatLstart = %q, want %q", got, tt.want)
			}
		})
	}
}
