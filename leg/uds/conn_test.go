package uds

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sessiongateway/gateway/internal/testutil"
)

func TestMaxLineInUTF16CodeUnits(t *testing.T) {
	const max = 10
	tests := []struct {
		name    string
		units   LineUnits
		line    string
		wantErr error
	}{
		{"ten two-byte characters are ten units", UnitUTF16, strings.Repeat("é", 10), io.EOF},
		{"eleven two-byte characters are over", UnitUTF16, strings.Repeat("é", 11), ErrLineTooLong},
		{"ten three-byte characters are ten units", UnitUTF16, strings.Repeat("€", 10), io.EOF},
		{"five emoji are ten units (surrogate pairs)", UnitUTF16, strings.Repeat("😀", 5), io.EOF},
		{"six emoji are twelve units, over", UnitUTF16, strings.Repeat("😀", 6), ErrLineTooLong},
		{"eleven ASCII characters are over", UnitUTF16, strings.Repeat("a", 11), ErrLineTooLong},
		{"bytes that start no character are capped at three per unit", UnitUTF16, strings.Repeat("\x80", 3*max+1), ErrLineTooLong},
		{"counted in bytes (Claude Code), ten two-byte characters are over", UnitBytes, strings.Repeat("é", 10), ErrLineTooLong},
		{"counted in bytes, ten ASCII characters fit", UnitBytes, strings.Repeat("a", 10), io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := make(chan lineResult, 1)
			s := serve(t, filepath.Join(testutil.ShortTempDir(t), "u.sock"), Limits{MaxLine: max, Units: tt.units}, recordLines(out))
			c := dialT(t, s.Path())
			if _, err := io.WriteString(c, tt.line+"\n"); err != nil {
				t.Fatal(err)
			}
			_ = c.CloseWrite()
			r := <-out
			if !errors.Is(r.err, tt.wantErr) {
				t.Fatalf("ended with %v, want %v", r.err, tt.wantErr)
			}
			if tt.wantErr == io.EOF && (len(r.lines) != 1 || r.lines[0] != tt.line) {
				t.Fatalf("lines = %q", r.lines)
			}
		})
	}
}

// stepLines is a handler that reads lines, marks every one starting with
// "ok", and answers each on acks: true once the line was read more than
// timeout after the handler started, that is, after the connection's first
// deadline (set before the handler runs) had passed. It ends with the error
// that stopped ReadLine, on out.
func stepLines(timeout time.Duration, acks chan<- bool, out chan<- lineResult) Handler {
	return func(ctx context.Context, c *Conn) {
		start := time.Now()
		var r lineResult
		for {
			line, err := c.ReadLine()
			if err != nil {
				r.err = err
				break
			}
			if bytes.HasPrefix(line, []byte("ok")) {
				c.Mark()
			}
			r.lines = append(r.lines, string(line))
			acks <- time.Since(start) > timeout
		}
		out <- r
		<-ctx.Done()
	}
}

func TestWhatRearmsTheReadDeadline(t *testing.T) {
	// The client writes a line, waits until the server has read it, pauses
	// briefly and writes the next, so every read needs a fresh deadline and
	// no gap comes near the timeout, however loaded the machine (a gap of
	// 2 s would be needed to fail spuriously). It closes once the server has
	// read a line past the connection's first deadline: a connection whose
	// deadline the lines move then ends in io.EOF, read after that first
	// deadline; one whose deadline they cannot move ends in ErrTimeout.
	const timeout = 2 * time.Second
	const pause = 10 * time.Millisecond
	tests := []struct {
		name    string
		rearm   Rearm
		line    string
		wantErr error
	}{
		{"junk lines keep a connection open when every line rearms (Claude Code)", RearmEachLine, "junk", io.EOF},
		{"junk lines do not extend the deadline when only accepted lines rearm (Qwen Code)", RearmOnMark, "junk", ErrTimeout},
		{"accepted lines extend the deadline when only accepted lines rearm", RearmOnMark, "ok", io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			acks := make(chan bool)
			out := make(chan lineResult, 1)
			lim := Limits{FirstLineTimeout: timeout, LineTimeout: timeout, Rearm: tt.rearm}
			s := serve(t, filepath.Join(testutil.ShortTempDir(t), "r.sock"), lim, stepLines(timeout, acks, out))
			c := dialT(t, s.Path())
			var r lineResult
		steps:
			for {
				if _, err := io.WriteString(c, tt.line+"\n"); err != nil {
					r = <-out // the server gave up on us
					break
				}
				select {
				case late := <-acks:
					if late {
						_ = c.CloseWrite()
						r = <-out
						break steps
					}
				case r = <-out:
					break steps
				}
				time.Sleep(pause)
			}
			if !errors.Is(r.err, tt.wantErr) {
				t.Fatalf("ended with %v after %d lines, want %v", r.err, len(r.lines), tt.wantErr)
			}
		})
	}
}

// FuzzReadLineUTF16 checks the UTF-16 cap against the length of the line
// as a JavaScript string, for valid UTF-8, wherever reads split it.
func FuzzReadLineUTF16(f *testing.F) {
	f.Add("é€😀\nabc\n", []byte{1, 2, 0}, uint16(4))
	f.Add(strings.Repeat("😀", 300)+"\n", []byte{2, 200}, uint16(600))
	f.Add("a\n\nb", []byte{}, uint16(1))
	f.Fuzz(func(t *testing.T, in string, sizes []byte, maxLine uint16) {
		if !utf8.ValidString(in) {
			return
		}
		max := int(maxLine%4096) + 1
		c := &Conn{
			lim: Limits{MaxLine: max, Units: UnitUTF16},
			br:  bufio.NewReaderSize(&chunkReader{data: []byte(in), sizes: sizes}, readBufSize),
		}
		var got []string
		var err error
		for {
			var line []byte
			if line, err = c.readLine(); err != nil {
				break
			}
			got = append(got, string(line))
		}
		var want []string
		wantErr := io.EOF
		if in != "" {
			segs := strings.Split(strings.TrimSuffix(in, "\n"), "\n")
			for _, s := range segs {
				if len(utf16.Encode([]rune(s))) > max {
					wantErr = ErrLineTooLong
					break
				}
				want = append(want, s)
			}
		}
		if !errors.Is(err, wantErr) || strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != len(want) {
			t.Fatalf("got %q, %v; want %q, %v", got, err, want, wantErr)
		}
	})
}
