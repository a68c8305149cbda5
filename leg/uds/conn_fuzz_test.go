package uds

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// chunkReader hands out its data in reads of the given sizes, so the fuzzer
// also chooses where the socket's read boundaries fall.
type chunkReader struct {
	data  []byte
	sizes []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.sizes) > 0 {
		n = int(r.sizes[0]) + 1
		r.sizes = r.sizes[1:]
	}
	n = min(n, len(p), len(r.data))
	copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// wantLines is the oracle: the input split at '\n' (a final '\n' ends the
// last line rather than starting an empty one), cut short at the first line
// over max, which must be refused.
func wantLines(in []byte, max int) (lines [][]byte, tooLong bool) {
	if len(in) == 0 {
		return nil, false
	}
	segs := bytes.Split(in, []byte("\n"))
	if len(segs[len(segs)-1]) == 0 {
		segs = segs[:len(segs)-1]
	}
	for _, s := range segs {
		if len(s) > max {
			return lines, true
		}
		lines = append(lines, s)
	}
	return lines, false
}

// FuzzReadLine checks the line framing against wantLines, wherever the
// socket's read boundaries fall.
func FuzzReadLine(f *testing.F) {
	f.Add([]byte("{\"type\":\"auth\"}\n{\"type\":\"user\"}\n"), []byte{3, 200}, uint16(64))
	f.Add([]byte("tail without newline"), []byte{}, uint16(20))
	f.Add([]byte("\n\n\n"), []byte{0}, uint16(1))
	f.Add(bytes.Repeat([]byte("x"), 5000), []byte{255, 255}, uint16(4096))
	f.Fuzz(func(t *testing.T, in, sizes []byte, maxLine uint16) {
		max := int(maxLine%8192) + 1
		c := &Conn{
			lim: Limits{MaxLine: max},
			br:  bufio.NewReaderSize(&chunkReader{data: in, sizes: sizes}, readBufSize),
		}
		var (
			got [][]byte
			err error
		)
		for {
			var line []byte
			if line, err = c.readLine(); err != nil {
				break
			}
			got = append(got, line)
		}
		want, tooLong := wantLines(in, max)
		wantErr := io.EOF
		if tooLong {
			wantErr = ErrLineTooLong
		}
		if !errors.Is(err, wantErr) {
			t.Fatalf("ended with %v, want %v", err, wantErr)
		}
		if len(got) != len(want) {
			t.Fatalf("got %d lines, want %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("line %d = %q, want %q", i, got[i], want[i])
			}
		}
	})
}
