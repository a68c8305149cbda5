package observability

import (
	"bytes"
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
	NewLogger(&buf, slog.LevelInfo).Info("sent", "to", "uds:/tmp/cc-socks/12.sock", "status", "held")
	if !strings.Contains(buf.String(), "uds:/tmp/cc-socks/12.sock") || !strings.Contains(buf.String(), `"status":"held"`) {
		t.Fatalf("ordinary attributes were changed: %s", buf.String())
	}
}
