package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func TestAPIRateHelpAndBehaviourAgreeOnWhatTurnsTheLimitOff(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := apiFlags(fs, &env{getenv: func(string) string { return "" }})
	if usage := fs.Lookup("api-rate").Usage; !strings.Contains(usage, "0 for no limit") {
		t.Fatalf("--api-rate help %q does not say 0 turns the limit off", usage)
	}
	tests := []struct {
		rate    string
		off     bool
		refused bool
	}{
		{"0", true, false},
		{"20", false, false},
		{"0.5", false, false},
		{"-1", true, false},
	}
	for _, tt := range tests {
		t.Run("--api-rate "+tt.rate, func(t *testing.T) {
			if err := fs.Parse([]string{"--api-rate", tt.rate}); err != nil {
				t.Fatal(err)
			}
			err := o.check("127.0.0.1:0")
			if (err != nil) != tt.refused {
				t.Fatalf("check = %v, refused want %v", err, tt.refused)
			}
			if !tt.refused && o.rateLimit().Off() != tt.off {
				t.Fatalf("limit off = %v, want %v", o.rateLimit().Off(), tt.off)
			}
		})
	}
}
