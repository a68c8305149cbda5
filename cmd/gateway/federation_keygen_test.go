package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFederationKeygenWritesTheHostKeyAndPrintsItsPublicKey(t *testing.T) {
	sd := t.TempDir()
	out, errOut, code := runCLI(t, sd, "federation", "keygen")
	pub := strings.TrimSpace(out)
	if code != exitOK || !strings.HasPrefix(pub, "ed25519:") || len(pub) != 51 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	key := filepath.Join(sd, "federation", "host.key")
	if fi, err := os.Lstat(key); err != nil || fi.Mode() != 0o600 {
		t.Fatalf("%s: %v, %v", key, fi, err)
	}
	if again, _, code := runCLI(t, sd, "federation", "keygen", "--show"); code != exitOK || strings.TrimSpace(again) != pub {
		t.Fatalf("--show: exit %d, %q", code, again)
	}
	if _, errOut, code := runCLI(t, sd, "federation", "keygen"); code != exitError || !strings.Contains(errOut, "--force") {
		t.Fatalf("a second keygen: exit %d, %q", code, errOut)
	}
}
