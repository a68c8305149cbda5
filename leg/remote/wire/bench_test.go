package wire

import (
	"encoding/json"
	"testing"
)

// benchLine is a busy session's typical event: an assistant message with
// a text block and a tool call.
const benchLine = `{"type":"assistant","uuid":"evt_1","session_id":"session_01","message":{"id":"msg_1","model":"claude-opus-4-6","role":"assistant","content":[{"type":"text","text":"Reading the file to see what the handler does with an empty body."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/srv/app/api/server.go"},"caller":{"type":"direct"}}],"stop_reason":"tool_use","usage":{"input_tokens":12345,"output_tokens":678,"cache_read_input_tokens":9000}}}`

// BenchmarkDecode compares Decode with a plain json.Unmarshal of the same
// line into a generic value, the raw counterpart.
func BenchmarkDecode(b *testing.B) {
	line := []byte(benchLine)
	b.Run("wire", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			if _, err := Decode(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json-any", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			var v any
			if err := json.Unmarshal(line, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDecodeV2 is BenchmarkDecode for a v2 event: the envelope the
// event stream sends around the same message.
func BenchmarkDecodeV2(b *testing.B) {
	ev := Event{ID: "7", Data: `{"event_id":"e","sequence_num":7,"event_type":"assistant","source":"worker","created_at":"2026-01-01T00:00:00Z","payload":` + benchLine + `}`}
	b.ReportAllocs()
	b.SetBytes(int64(len(ev.Data)))
	for b.Loop() {
		if _, err := DecodeV2(ev); err != nil {
			b.Fatal(err)
		}
	}
}
