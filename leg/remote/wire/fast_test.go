package wire

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// fastSeeds are lines the fast path must take itself (not give way on).
var fastSeeds = []string{seedKeepAlive, seedAssistant, seedResult, seedInterrupt, seedPermMode, seedInit,
	seedAskUser, seedAllow, seedError, seedInitAns, seedCancel, benchLine,
	`{"type":"user","uuid":"u","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","is_error":true,"content":[{"type":"text","text":"a\"b\\u00e9\n"}]}]},"tool_use_result":{"stdout":"x"}}`,
	`{"type":"user","message":{"role":"user","content":"Hello \u2603"}}`,
	`{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"","signature":"s"},{"type":"tool_reference","tool_name":"T"},{"type":"server_tool_use","id":"x"}]}}`,
	`{"type":"system","subtype":"init","extra":[1,2,{"a":null}]}`,
	`{"type":"assistant","message":{"content":[]}}`,
	`{"type":"assistant","message":null}`,
	`{"type":"brand_new","uuid":"n"}`,
}

func TestFastPathTakesTheCommonMessages(t *testing.T) {
	for _, s := range fastSeeds {
		line := []byte(strings.TrimSpace(s))
		fm, ok := decodeFast([]byte(string(line)), "", "")
		if !ok {
			t.Errorf("the fast path gave way on %s", s)
			continue
		}
		sm, err := decodeSlow(line, "")
		if err != nil || !reflect.DeepEqual(fm, sm) {
			t.Errorf("fast and reference disagree on %s:\n%+v\n%+v (%v)", s, fm, sm, err)
		}
	}
}

func TestFastPathGivesWayWhenInDoubt(t *testing.T) {
	for _, s := range []string{
		`{"Type":"assistant"}`,                  // encoding/json matches names regardless of case
		`{"type":"assistant","type":"user"}`,    // duplicate name
		`{"type":"assistant","uuid":"\xff"}`,    // invalid UTF-8, replaced by encoding/json
		`{"type":"user","file_attachments":[]}`, // rare: left to the reference
		`{"type":"assistant","message":{"content":5}}`,
		`{"type":"result","num_turns":1.5}`,
		`{"type":"assistant"} x`,
	} {
		if _, ok := decodeFast([]byte(s), "", ""); ok {
			t.Errorf("the fast path took %s", s)
		}
	}
}

// v2Seeds are envelopes the fast path must take, its payload read in the
// envelope's one pass: event_type after the payload (the payload's own type
// missing), space and escapes around it, a bare message.
var v2Seeds = []string{
	`{"event_id":"e","sequence_num":7,"event_type":"assistant","payload":` + benchLine + `}`,
	`{"payload":{"uuid":"u","message":{"role":"user","content":"x"}},"event_type":"user","sequence_num":4}`,
	`{"sequence_num":"5", "payload" :	{"type":"result","subtype":"success","result":"d\u00e9j\u00e0","num_turns":2} ,"created_at":"t"}`,
	`{"event_id":"e2","sequence_num":6,"payload":{"type":"control_request","request_id":"r","request":{"subtype":"interrupt"}}}`,
	`{"sequence_num":8,"type":"assistant","uuid":"b","message":{"content":[{"type":"text","text":"bare"}]}}`,
}

func TestFastPathTakesV2Events(t *testing.T) {
	for _, s := range v2Seeds {
		raw := []byte(s)
		fv, ok := decodeV2Fast([]byte(s), s, 0, "")
		if !ok {
			t.Errorf("the fast path gave way on %s", s)
			continue
		}
		sv, err := decodeV2Slow(raw, "")
		if err != nil || !reflect.DeepEqual(fv, sv) {
			t.Errorf("fast and reference disagree on %s:\n%+v\n%+v (%v)", s, fv, sv, err)
		}
	}
}

// An assistant message with two blocks costs a handful of allocations: the
// line's copy, its string, the message, its block list and its usage.
// Under the race detector, which CI runs every test with, the counts are
// taken by this test in a binary built without it (see withoutRace).
func TestDecodeAllocations(t *testing.T) {
	if raceOn {
		withoutRace(t)
		return
	}
	line := []byte(benchLine)
	n := testing.AllocsPerRun(100, func() {
		if _, err := Decode(line); err != nil {
			t.Fatal(err)
		}
	})
	if n > 6 {
		t.Errorf("Decode made %v allocations, want at most 6", n)
	}
	ev := Event{ID: "7", Data: `{"event_id":"e","sequence_num":7,"event_type":"assistant","payload":` + benchLine + `}`}
	n = testing.AllocsPerRun(100, func() {
		if _, err := DecodeV2(ev); err != nil {
			t.Fatal(err)
		}
	})
	if n > 5 {
		t.Errorf("DecodeV2 made %v allocations, want at most 5", n)
	}
}

// FuzzFastDecode holds the fast path to the reference: wherever it takes a
// line, as a message or as a v2 event, it decodes it exactly as
// encoding/json does part by part.
func FuzzFastDecode(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
		f.Add([]byte(`{"event_id":"e","sequence_num":"3","payload":` + s + `}`))
	}
	for _, s := range v2Seeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"sequence_num":2,"type":"assistant","message":{"content":"x"}}`))
	f.Add([]byte(`{"event_type":"user","sequence_num":1,"payload":null,"message":{"content":[{"type":"text","text":"é"}]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		raw := trimJSONSpace(line)
		if len(raw) == 0 || raw[0] != '{' {
			return
		}
		if fm, ok := decodeFast([]byte(string(raw)), "", "dflt"); ok {
			sm, err := decodeSlow(raw, "dflt")
			if err != nil || !reflect.DeepEqual(fm, sm) {
				t.Fatalf("message: fast %+v\nreference %+v (%v)", fm, sm, err)
			}
		}
		ev := Event{ID: "9", Data: string(line)}
		lead := len(line) - len(trimLeftJSONSpace(line))
		if fv, ok := decodeV2Fast([]byte(string(raw)), ev.Data, lead, ev.ID); ok {
			sv, err := decodeV2Slow(raw, ev.ID)
			if err != nil || !reflect.DeepEqual(fv, sv) {
				t.Fatalf("v2: fast %+v\nreference %+v (%v)", fv, sv, err)
			}
		}
	})
}

func trimLeftJSONSpace(b []byte) []byte {
	for len(b) > 0 && strings.IndexByte(" \t\r\n", b[0]) >= 0 {
		b = b[1:]
	}
	return b
}

func TestReadersKeepNoLongLineBuffer(t *testing.T) {
	long := `{"type":"keep_alive","pad":"` + strings.Repeat("x", 200<<10) + `"}`
	r := NewNDJSONReader(strings.NewReader(long+"\n"+seedCancel+"\n"), 0)
	for range 2 {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if cap(r.buf) > keepBuf {
		t.Errorf("the NDJSON reader keeps %d bytes after a long line", cap(r.buf))
	}
	s := NewSSEReader(strings.NewReader("data: "+long+"\n\ndata: {}\n\n"), SSEOptions{})
	for range 2 {
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if cap(s.data) > keepBuf || cap(s.line) > keepBuf {
		t.Errorf("the SSE reader keeps %d and %d bytes after a long event", cap(s.data), cap(s.line))
	}
}

// withoutRace runs t's test in this package's test binary built without
// the race detector, and fails t when it fails there or does not run: the
// race detector makes sync.Pool drop what it is given, so allocations
// cannot be counted under it, and a test that only skipped there would
// never run in CI.
func withoutRace(t *testing.T) {
	t.Helper()
	cmd := exec.Command("go", "test", "-race=false", "-count=1", "-v", "-run", "^"+t.Name()+"$", ".")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s without the race detector: %v\n%s", t.Name(), err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()+" ") {
		t.Fatalf("%s did not run without the race detector:\n%s", t.Name(), out)
	}
}
