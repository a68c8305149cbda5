package api

import (
	"strings"
	"testing"
)

// FuzzCompactJSON: whatever a probed server answers, the health command
// prints it on one line (probe logs are line-based).
func FuzzCompactJSON(f *testing.F) {
	f.Add([]byte(`{"status": "ok", "version": "1.2.3"}`))
	f.Add([]byte("{\"ready\":false,\n \"legs\":{\"remote\":\"401\"}}"))
	f.Add([]byte("bad\ngateway\r\n"))
	f.Add([]byte("\"\\u2028\""))
	f.Add([]byte{0xff, '\n', 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		if got := compactJSON(b); strings.ContainsAny(got, "\r\n") {
			t.Fatalf("compactJSON(%q) = %q spans lines", b, got)
		}
	})
}
