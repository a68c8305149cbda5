package qwencli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// echoBin is a stand-in for the CLI: it echoes each stdin line as a JSON
// line on stdout, skips the line "quit" and exits 3 at EOF or on it.
func echoBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "qwen")
	src := "#!/bin/sh\nwhile read -r l; do [ \"$l\" = quit ] && exit 3; printf '%s\\n' \"$l\"; done\nexit 3\n"
	if err := os.WriteFile(bin, []byte(src), 0o700); err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestAHeadlessSessionReadsTheLinesItsCLIPrints(t *testing.T) {
	h := StartHeadless(t, Options{Bin: echoBin(t), APIURL: "http://127.0.0.1:1/v1"})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	for _, v := range []map[string]any{{"type": "a"}, {"type": "b"}, {"type": "a", "n": 2}} {
		if err := h.WriteJSON(v); err != nil {
			t.Fatal(err)
		}
	}
	isA := func(l json.RawMessage) bool { return strings.Contains(string(l), `"type":"a"`) }
	first, i, err := h.WaitLine(ctx, 0, isA)
	if err != nil || string(first) != `{"type":"a"}` || i != 0 {
		t.Fatalf("the first a is line 0: %s %d %v", first, i, err)
	}
	second, i, err := h.WaitLine(ctx, i+1, isA)
	if err != nil || string(second) != `{"n":2,"type":"a"}` || i != 2 {
		t.Fatalf("the next a after it is line 2: %s %d %v", second, i, err)
	}
	if err := h.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.WaitLine(ctx, 0, func(json.RawMessage) bool { return false }); !errors.Is(err, ErrExited) {
		t.Errorf("waiting past the CLI's exit is ErrExited: %v", err)
	}
	if code := h.ExitCode(); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	if err := h.Stop(); err != nil {
		t.Errorf("an exit after CloseStdin is not an error for Stop: %v", err)
	}
}

func TestAHeadlessSessionThatExitsUntoldIsAnErrorForStop(t *testing.T) {
	h, err := startHeadless(t, Options{Bin: echoBin(t), APIURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	h.stdin.Write([]byte("quit\n"))
	select {
	case <-h.Done():
	case <-time.After(waitLimit):
		t.Fatal("the stand-in did not exit")
	}
	if err := h.Stop(); !errors.Is(err, ErrExited) {
		t.Errorf("Stop after an exit nobody asked for: %v, want ErrExited", err)
	}
}
