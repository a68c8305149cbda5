package federation

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/internal/safefile"
)

func TestKeygenWritesAPrivateKeyAndPrintsItsPublicKey(t *testing.T) {
	state := t.TempDir()
	var out, errs bytes.Buffer
	env := func(string) string { return "" }
	if code := KeygenMain(nil, env, state, &out, &errs); code != 0 {
		t.Fatalf("keygen: %d %s", code, errs.String())
	}
	file := KeyFile(state)
	for p, want := range map[string]os.FileMode{file: 0o600, filepath.Dir(file): 0o700 | os.ModeDir} {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode() != want {
			t.Fatalf("%s: %v, %v; want %v", p, fi.Mode(), err, want)
		}
	}
	pub := strings.TrimSpace(out.String())
	k, err := LoadKey(file)
	if err != nil || FormatPublicKey(k.Public().(ed25519.PublicKey)) != pub {
		t.Fatalf("printed %q; the file holds %v (%v)", pub, k.Public(), err)
	}
	if _, err := ParsePublicKey(pub); err != nil {
		t.Fatal(err)
	}

	// --show prints the same key again and writes nothing.
	out.Reset()
	if code := KeygenMain([]string{"--show"}, env, state, &out, &errs); code != 0 || strings.TrimSpace(out.String()) != pub {
		t.Fatalf("--show: %d %q", code, out.String())
	}
	// A second keygen refuses; --force replaces.
	if code := KeygenMain(nil, env, state, &out, &errs); code != 1 || !strings.Contains(errs.String(), "--force") {
		t.Fatalf("second keygen: %d %s", code, errs.String())
	}
	out.Reset()
	if code := KeygenMain([]string{"--force"}, env, state, &out, &errs); code != 0 || strings.TrimSpace(out.String()) == pub {
		t.Fatalf("--force: %d %q", code, out.String())
	}
	// GATEWAY_FEDERATION_KEY chooses the file.
	other := filepath.Join(t.TempDir(), "keys", "a.key")
	out.Reset()
	if code := KeygenMain(nil, func(k string) string {
		if k == "GATEWAY_FEDERATION_KEY" {
			return other
		}
		return ""
	}, state, &out, &errs); code != 0 {
		t.Fatalf("keygen to %s: %d %s", other, code, errs.String())
	}
	if _, err := LoadKey(other); err != nil {
		t.Fatal(err)
	}
}

func TestKeygenNeverWritesThroughASymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	priv := filepath.Join(dir, "private")
	if err := os.Mkdir(priv, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(priv, "host.key")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	for _, force := range []bool{false, true} {
		if _, err := Keygen(link, force); err == nil {
			t.Fatalf("force=%v: wrote through a symlink", force)
		}
	}
	// Nor into a directory that is a symlink.
	linkDir := filepath.Join(dir, "linkdir")
	if err := os.Symlink(priv, linkDir); err != nil {
		t.Fatal(err)
	}
	if _, err := Keygen(filepath.Join(linkDir, "other.key"), false); !errors.Is(err, safefile.ErrSymlink) {
		t.Fatalf("into a symlinked directory: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("victim now %q", b)
	}
	if _, err := os.Lstat(filepath.Join(priv, "other.key")); err == nil {
		t.Fatal("a key was written through the symlinked directory")
	}
}

func TestAHostKeyIsReadOnlyWhenPrivate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "host.key")
	if _, err := Keygen(file, false); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(file); !errors.Is(err, safefile.ErrLooseMode) {
		t.Fatalf("a world-readable key loaded: %v", err)
	}
	for name, body := range map[string]string{
		"empty":      "",
		"nkey seed":  "SUAIBDPBAUTWCWBKIO6XHQNINK5FWJW4OHLXC3HQ2KFE4PEJUA44CNHTC4\n",
		"short seed": "ed25519-seed:AAAA\n",
		"comments":   "# nothing\n",
	} {
		if _, err := parseSeed([]byte(body)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func TestPublicKeysRoundTrip(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(nil)
	s := FormatPublicKey(pub)
	if !strings.HasPrefix(s, "ed25519:") || len(s) != 51 {
		t.Fatal(s)
	}
	got, err := ParsePublicKey(s)
	if err != nil || !got.Equal(pub) {
		t.Fatal(got, err)
	}
	for _, bad := range []string{"", "ed25519:", s[:50], s + "A", "ED25519:" + s[8:], "ed25519:" + strings.Repeat("+", 43)} {
		if _, err := ParsePublicKey(bad); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
}

func TestServeCreatesTheHostKeyOnFirstStartAndKeepsIt(t *testing.T) {
	c := sharedCluster(t)
	state := t.TempDir()
	if err := os.Chmod(state, 0o700); err != nil {
		t.Fatal(err)
	}
	n := join(t, c.url(0), "key-first", func(c *Config) { c.StateDir = state })
	k, err := LoadKey(KeyFile(state))
	if err != nil || FormatPublicKey(k.Public().(ed25519.PublicKey)) != n.PublicKey() {
		t.Fatalf("the key file: %v, %v; the node signs as %s", k, err, n.PublicKey())
	}
	pub := n.PublicKey()
	n.Close()
	again := join(t, c.url(1), "key-first", func(c *Config) { c.StateDir = state })
	if again.PublicKey() != pub {
		t.Fatalf("a restart signs as %s, not %s", again.PublicKey(), pub)
	}
}
