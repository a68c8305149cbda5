package observability

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestLogFormats(t *testing.T) {
	const tok = "0123456789abcdef0123456789abcdef"
	tests := []struct {
		name     string
		format   LogFormat
		wantJSON bool
	}{
		{"json writes one JSON object a line", LogJSON, true},
		{"text writes key=value lines", LogText, false},
		{"auto writes JSON when the writer is not a terminal", LogAuto, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			NewFormatLogger(&buf, slog.LevelInfo, tt.format).Info("gateway serving", "leg", "claude", "token", tok)
			line := buf.String()
			isJSON := json.Valid(bytes.TrimSpace(buf.Bytes()))
			if isJSON != tt.wantJSON {
				t.Fatalf("JSON %v, want %v: %s", isJSON, tt.wantJSON, line)
			}
			if !tt.wantJSON && (!strings.Contains(line, "leg=claude") || !strings.Contains(line, "level=INFO ")) {
				t.Errorf("text line without its attribute: %s", line)
			}
			if strings.Contains(line, tok) {
				t.Errorf("secret in the log: %s", line)
			}
		})
	}
}

func TestParseLogFormat(t *testing.T) {
	for _, s := range []string{"auto", "text", "json"} {
		if f, err := ParseLogFormat(s); err != nil || string(f) != s {
			t.Errorf("ParseLogFormat(%q) = %q, %v", s, f, err)
		}
	}
	if _, err := ParseLogFormat("yaml"); err == nil {
		t.Error("yaml accepted")
	}
}
