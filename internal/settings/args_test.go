package settings

import "testing"

func TestSubcommandAt(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"the subcommand first", []string{"sessions", "--json"}, 0},
		{"a bool flag before it", []string{"--json", "sessions"}, 1},
		{"a flag's value is not the subcommand", []string{"--state-dir", "/s", "watch", "x"}, 2},
		{"a flag with its value attached", []string{"-state-dir=/s", "watch"}, 1},
		{"after --", []string{"--", "sessions"}, 1},
		{"none at all", []string{"--json"}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SubcommandAt(tt.args, []string{"state-dir", "since"}); got != tt.want {
				t.Fatalf("SubcommandAt(%q) = %d, want %d", tt.args, got, tt.want)
			}
		})
	}
}
