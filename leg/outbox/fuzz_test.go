package outbox

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDecodeEntry reads entries as a damaged or foreign file may hold
// them: rejecting is fine, crashing is not, and what is read prints back
// to something read the same way.
func FuzzDecodeEntry(f *testing.F) {
	f.Add([]byte("m1"), []byte(`{"v":1,"seq":3,"message":{"id":"m1","to":"bridge:s1","body":"hi","mode":"prompting","hop_chain":["uds:/tmp/cc-socks/1.sock"],"attested":false,"time":"2026-01-02T03:04:05Z"},"leg":"remote","state":"pending","accepted_at":"2026-01-02T03:04:05+01:00","attempts":2,"last_error":"HTTP 503","next_attempt_at":"2026-01-02T03:05:05Z"}`))
	f.Add([]byte("m2"), []byte(`{"v":1,"message":{"id":"m2","body":"","attested":true,"time":"0001-01-01T00:00:00Z"},"state":"failed","failure":"refused","receipt":{"msg_id":"m2","status":"failed","time":"2026-01-02T03:04:05Z"}}`))
	f.Add([]byte("m3"), []byte(`{"v":1,"message":{"id":"m3"},"state":"acked","failure":"bogus"}`))
	f.Add([]byte("x"), []byte(`{"v":2}`))
	f.Add([]byte(""), []byte(`null`))
	f.Fuzz(func(t *testing.T, key, v []byte) {
		e, err := decodeEntry(key, v)
		if err != nil {
			return
		}
		b, err := json.Marshal(e)
		if err != nil {
			// A state or failure the printer cannot write must not have
			// been read.
			t.Fatalf("read %q but cannot print it: %v", v, err)
		}
		again, err := decodeEntry(key, b)
		if err != nil {
			t.Fatalf("printed %q is not read back: %v", b, err)
		}
		b2, _ := json.Marshal(again)
		if !bytes.Equal(b, b2) {
			t.Fatalf("round trip changed %s into %s", b, b2)
		}
	})
}
