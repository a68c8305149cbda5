package auth

import (
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// ParseSigner builds the Signer a --remote-signer value names: none,
// ed25519-file:PATH, or exec:COMMAND [ARGS] (run with a 10 s limit).
func ParseSigner(spec string) (Signer, error) {
	switch {
	case spec == "none":
		return NewNoneSigner(), nil
	case strings.HasPrefix(spec, "ed25519-file:"):
		s, err := NewEd25519FileSigner(strings.TrimPrefix(spec, "ed25519-file:"))
		if err != nil {
			return nil, fmt.Errorf("--remote-signer: %w", err)
		}
		return s, nil
	case strings.HasPrefix(spec, "exec:"):
		argv := strings.Fields(strings.TrimPrefix(spec, "exec:"))
		if len(argv) == 0 {
			return nil, fmt.Errorf("--remote-signer exec: names no command")
		}
		// Found now, so a misspelt command fails the start, not the first
		// event signed an hour later.
		if _, err := exec.LookPath(argv[0]); err != nil {
			if ee, ok := err.(*exec.Error); ok {
				err = ee.Err
			}
			return nil, fmt.Errorf("--remote-signer: cannot run %q: %w", argv[0], err)
		}
		return NewExecSigner(argv, 10*time.Second), nil
	}
	return nil, fmt.Errorf("--remote-signer %q: want none, ed25519-file:PATH or exec:COMMAND", spec)
}
