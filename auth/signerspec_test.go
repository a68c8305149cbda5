package auth

import (
	"strings"
	"testing"
)

func TestParseSigner(t *testing.T) {
	tests := []struct {
		spec    string
		wantErr string
	}{
		{"none", ""},
		{"exec:/bin/true --flag", ""},
		{"exec:", "names no command"},
		{"exec:/nonexistent/signer --flag", `cannot run "/nonexistent/signer"`},
		{"exec:no-such-signer-on-path", `cannot run "no-such-signer-on-path"`},
		{"ed25519-file:/nonexistent/key", "key file"},
		{"hsm", "want none"},
	}
	for _, tt := range tests {
		t.Run("signer spec "+tt.spec, func(t *testing.T) {
			s, err := ParseSigner(tt.spec)
			if tt.wantErr == "" {
				if err != nil || s == nil {
					t.Fatalf("ParseSigner = %v, %v", s, err)
				}
				return
			}
			if err == nil || !strings.Contains(strings.ToLower(err.Error()), tt.wantErr) {
				t.Fatalf("ParseSigner err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
