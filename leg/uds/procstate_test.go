package uds

import (
	"os"
	"testing"
)

func TestParseStatState(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		state   byte
		ppid    int
		wantErr bool
	}{
		{"a plain line gives state and parent", "42 (sleep) S 7 42 42 0", 'S', 7, false},
		{"a name with spaces and parens is skipped whole", "42 (a) Z (b) Z 9 1 1", 'Z', 9, false},
		{"a line cut after the state is an error", "42 (x) S", 0, 0, true},
		{"a non-numeric parent is an error", "42 (x) S y", 0, 0, true},
		{"no name is an error", "42 S 7", 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, pp, err := parseStatState([]byte(tt.in))
			if (err != nil) != tt.wantErr || st != tt.state || pp != tt.ppid {
				t.Fatalf("got %q %d %v", st, pp, err)
			}
		})
	}
}

func TestProcStateOfOurselves(t *testing.T) {
	st, pp, err := ProcState(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if pp != os.Getppid() || (st != 'R' && st != 'S') {
		t.Fatalf("state %q ppid %d, want running or sleeping under %d", st, pp, os.Getppid())
	}
}
