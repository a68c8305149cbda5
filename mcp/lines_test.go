package mcp

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// FuzzCapLines checks the stdio cap against a plain split: every line
// within the cap passes unchanged and in order, every longer complete
// line is answered with one error, whatever the bytes.
func FuzzCapLines(f *testing.F) {
	f.Add([]byte("{\"a\":1}\nshort\n0123456789abcdef\nlast"), 8)
	f.Add([]byte("\n\n\n"), 0)
	f.Add(bytes.Repeat([]byte("x"), 100), 16)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 0 || max > 64 {
			return
		}
		var replies bytes.Buffer
		l := &capLines{r: bufio.NewReaderSize(bytes.NewReader(in), 16), c: nopCloser{}, w: &lockedConn{w: nopCloser{&replies}}, max: max}
		got, err := io.ReadAll(l)
		if err != nil {
			t.Fatal(err)
		}
		var want []byte
		refused := 0
		for rest := in; len(rest) > 0; {
			line := rest
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				line = rest[:i+1]
			}
			rest = rest[len(line):]
			complete := line[len(line)-1] == '\n'
			switch {
			case len(line) <= max+1:
				want = append(want, line...)
			case complete:
				refused++
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("passed %q, want %q", got, want)
		}
		if n := bytes.Count(replies.Bytes(), []byte("\n")); n != refused || bytes.Count(replies.Bytes(), oversized(max)) != refused {
			t.Fatalf("%d replies (%q), want %d", n, replies.String(), refused)
		}
	})
}
