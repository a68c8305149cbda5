package observability

import (
	"bytes"
	"strings"
	"testing"
)

func TestTheSummaryNamesLegsAddressesAndNextCommands(t *testing.T) {
	tests := []struct {
		name    string
		s       Summary
		want    []string
		notWant []string
	}{
		{"the default state directory needs no flag", Summary{Name: "gw", Legs: []string{"claude", "qwen", "mcp"},
			Socket: "/s/gateway.sock", APIURL: "http://127.0.0.1:8080", Version: "1.0"},
			[]string{`claude registered as "gw"`, `qwen registered as "gw"`, "/s/gateway.sock", "http://127.0.0.1:8080", "mcp running", "gateway sessions\n", "gateway send NAME"},
			[]string{"--state-dir"}},
		{"another state directory is kept in every command", Summary{Name: "gw", Legs: []string{"claude"}, Socket: "/my state/gateway.sock", StateDir: "/my state", DefaultStateDir: "/home/u/.local/state/gateway"},
			[]string{"gateway status --state-dir '/my state'\n", "gateway sessions --state-dir '/my state'\n", "gateway send --state-dir '/my state' NAME", "gateway watch --state-dir '/my state'\n"},
			[]string{"API"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.s.Write(&buf); err != nil {
				t.Fatal(err)
			}
			flat := strings.Join(strings.FieldsFunc(buf.String(), func(r rune) bool { return r == ' ' }), " ")
			for _, w := range tt.want {
				if !strings.Contains(flat, w) {
					t.Errorf("summary lacks %q:\n%s", w, buf.String())
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(buf.String(), w) {
					t.Errorf("summary has %q:\n%s", w, buf.String())
				}
			}
		})
	}
}
