package stream_test

import (
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/leg/remote/stream"
)

// BenchmarkStreamDecode measures events per second decoded from one live
// stream: b.N stored assistant messages sent by the fake (WebSocket replay,
// or the event stream from its start) through the whole client path: read,
// frame, decode, de-duplicate, deliver.
func BenchmarkStreamDecode(b *testing.B) {
	for _, tr := range transports {
		b.Run(string(tr), func(b *testing.B) {
			c := newCloud(b, fakecloud.Options{})
			for i := range b.N {
				c.emit(b, fmt.Sprintf(`{"type":"assistant","uuid":"evt_%d","message":{"id":"msg_%d","model":"claude-opus-4-6","role":"assistant","content":[{"type":"text","text":"Reading the file to see what the handler does with an empty body."},{"type":"tool_use","id":"toolu_%d","name":"Read","input":{"file_path":"/work/main/api/server.go"},"caller":{"type":"direct"}}],"stop_reason":"tool_use","usage":{"input_tokens":12345,"output_tokens":678,"cache_read_input_tokens":9000}}}`, i, i, i))
			}
			cfg := c.config(tr)
			cfg.History = nil // the live path only
			cfg.Initialize = false
			cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			// With a resume point the WebSocket asks for replay; the event
			// stream without one starts at the beginning.
			cfg.ResumeAfterID = "evt_none"
			r := newRunning(b, cfg)
			// The remote leg's queue depth; read without a timer per
			// event, as the leg does.
			r.updates = make(chan stream.Update, 16)
			b.ReportAllocs()
			b.ResetTimer()
			r.start()
			for range b.N {
				var u stream.Update
				select {
				case u = <-r.updates:
				case err := <-r.done:
					b.Fatalf("Run returned %v while an update was expected", err)
				}
				if u.Message.Assistant == nil {
					b.Fatalf("update %s is not an assistant message", u.Message.Type)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
