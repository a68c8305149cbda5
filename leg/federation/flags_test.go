package federation

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/internal/testutil"
)

func TestFlagsCheckWithoutConnecting(t *testing.T) {
	parse := func(args ...string) *Flags {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil { // a state directory is private
		t.Fatal(err)
	}
	if err := parse().Check(dir); err != nil {
		t.Fatalf("no federation: %v", err)
	}
	if err := parse("--federation", "nats://127.0.0.1:4222", "--host", "laptop-a").Check(dir); err != nil {
		t.Fatalf("good flags: %v", err)
	}
	if err := parse("--federation", "embedded", "--host", "Bad.Name").Check(dir); err == nil || !strings.Contains(err.Error(), "Bad.Name") {
		t.Fatalf("bad host: %v", err)
	}
	if n, err := parse().Join(t.Context(), dir, nil); n != nil || err != nil {
		t.Fatalf("join without --federation: %v, %v", n, err)
	}
	// The instance id is kept, so a restart takes its own lease back.
	if a, b := instanceID(dir), instanceID(dir); a == "" || a != b {
		t.Fatalf("instance ids %q, %q", a, b)
	}
}

func TestTheSecurityFlagsReachTheConfiguration(t *testing.T) {
	dir := t.TempDir()
	trust := testutil.WriteFile(t, filepath.Join(dir, "trust"), []byte("a "+FormatPublicKey(newPub(t))+"\n"), 0o600)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := RegisterFlags(fs)
	if err := fs.Parse([]string{"--federation", "embedded", "--federation-key", "/k/host.key", "--federation-trust", trust,
		"--federation-server-config", "/k/nats.conf", "--federation-no-auth"}); err != nil {
		t.Fatal(err)
	}
	c := f.config(dir, nil)
	if c.KeyFile != "/k/host.key" || c.TrustFile != trust || c.ServerConfig != "/k/nats.conf" || !c.NoAuth {
		t.Fatalf("config %+v", c)
	}
	if err := f.Check(dir); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, trust, []byte("# ok\nb nonsense\n"), 0o600)
	if err := f.Check(dir); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("a broken trust file at start: %v", err)
	}
}
