package observability

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestLeveledStartsAtTheLoggersLevelAndMoves(t *testing.T) {
	var buf bytes.Buffer
	log, lv := Leveled(NewLogger(&buf, slog.LevelWarn))
	if lv.Level() != slog.LevelWarn {
		t.Fatalf("level %v, want the logger's warn", lv.Level())
	}
	log.Info("hidden")
	lv.Set(slog.LevelInfo)
	log.Info("shown")
	if out := buf.String(); strings.Contains(out, "hidden") || !strings.Contains(out, "shown") {
		t.Fatalf("log = %q", out)
	}
}
