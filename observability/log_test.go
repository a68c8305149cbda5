package observability

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestLoggerRedactsSecrets(t *testing.T) {
	const tok = "0123456789abcdef0123456789abcdef"
	tests := []struct {
		name string
		log  func(l *slog.Logger)
	}{
		{"a Secret value is redacted", func(l *slog.Logger) { l.Info("x", "peer", Secret(tok)) }},
		{"an attribute named like a token is redacted", func(l *slog.Logger) { l.Info("x", "peerToken", tok) }},
		{"an auth line inside a string is redacted", func(l *slog.Logger) { l.Info("x", "line", `{"type":"auth","token":"`+tok+`"}`) }},
		{"a bearer header is redacted", func(l *slog.Logger) { l.Info("x", "hdr", "Bearer "+tok) }},
		{"a qwen controller token is redacted", func(l *slog.Logger) { l.Info("x", "out", "qpc_"+tok) }},
		{"a token in the message text is redacted", func(l *slog.Logger) { l.Info(`got {"type":"auth","token":"` + tok + `"}`) }},
		{"a token in a group is redacted", func(l *slog.Logger) { l.WithGroup("g").Info("x", "childToken", tok) }},
		{"an error quoting an auth line is redacted", func(l *slog.Logger) {
			l.Info("x", "err", fmt.Errorf("bad frame %s", `{"type":"auth","token":"`+tok+`"}`))
		}},
		{"a struct with a token field is redacted", func(l *slog.Logger) {
			l.Info("x", "key", struct {
				PeerToken string `json:"peerToken"`
				PID       int    `json:"pid"`
			}{tok, 12})
		}},
		{"a map with a secret entry is redacted", func(l *slog.Logger) { l.Info("x", "m", map[string]string{"client_secret": tok}) }},
		{"an ipcToken in a record is redacted", func(l *slog.Logger) { l.Info("x", "record", `{"pid":1,"ipcToken":"`+tok+`"}`) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.log(NewLogger(&buf, slog.LevelInfo))
			if strings.Contains(buf.String(), tok) {
				t.Fatalf("token leaked: %s", buf.String())
			}
			if !strings.Contains(buf.String(), redacted) {
				t.Fatalf("no redaction marker: %s", buf.String())
			}
		})
	}
}

func TestLoggerKeepsOrdinaryText(t *testing.T) {
	var buf bytes.Buffer
	NewLogger(&buf, slog.LevelInfo).Info("sent", "to", "uds:/tmp/cc-socks/12.sock", "status", "held",
		"err", errors.New("dial uds:/tmp/x.sock: connection refused"), "peer", struct {
			Name string `json:"name"`
		}{"work_08"})
	if !strings.Contains(buf.String(), "uds:/tmp/cc-socks/12.sock") || !strings.Contains(buf.String(), `"status":"held"`) ||
		!strings.Contains(buf.String(), `"err":"dial uds:/tmp/x.sock: connection refused"`) || !strings.Contains(buf.String(), `"peer":{"name":"work_08"}`) {
		t.Fatalf("ordinary attributes were changed: %s", buf.String())
	}
}
