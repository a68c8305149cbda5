package federation

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/internal/testutil"
)

func newPub(t testing.TB) ed25519.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

func TestParseTrustNamesTheLineThatIsWrong(t *testing.T) {
	a, b := FormatPublicKey(newPub(t)), FormatPublicKey(newPub(t))
	_, err := ParseTrust([]byte("# hosts\n\nlaptop " + a + "\n  build-1\t" + b + "  # not a comment\n"))
	if err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Fatalf("a trailing word: %v", err)
	}
	keys, err := ParseTrust([]byte("# hosts\n\nlaptop " + a + "\r\n  build-1\t" + b + "\n"))
	if err != nil || len(keys) != 2 || FormatPublicKey(keys["build-1"]) != b || FormatPublicKey(keys["laptop"]) != a {
		t.Fatalf("keys %v, %v", keys, err)
	}
	for name, c := range map[string]struct{ in, want string }{
		"one field":  {"laptop\n", "line 1: want HOST ed25519:KEY"},
		"bad host":   {"# x\nLap.top " + a, "line 2: \"Lap.top\" is not a host name"},
		"bad key":    {"laptop ed25519:xyz", "line 1: public key"},
		"nkey":       {"laptop UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4", "line 1: public key"},
		"twice":      {"a " + a + "\nb " + b + "\na " + b, "line 3: host a is listed twice"},
		"oversized":  {strings.Repeat("#", maxTrustFile+1), "over"},
		"many hosts": {manyHosts(t, maxTrustHosts+1), fmt.Sprintf("line %d: more than", maxTrustHosts+1)},
	} {
		if _, err := ParseTrust([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", name, err, c.want)
		}
	}
}

func manyHosts(t *testing.T, n int) string {
	k := FormatPublicKey(newPub(t))
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "h%d %s\n", i, k)
	}
	return b.String()
}

func FuzzParseTrust(f *testing.F) {
	k := FormatPublicKey(ed25519.PublicKey(make([]byte, 32)))
	for _, s := range []string{"", "# c\n", "a " + k + "\n", "a " + k + "\nb " + k, "a\tb c", "a " + k + " x", "\xff " + k} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, err := ParseTrust(b)
		if err != nil {
			return
		}
		// What parses writes back as the same keys.
		again, err := ParseTrust(formatTrust(keys))
		if err != nil || len(again) != len(keys) {
			t.Fatalf("%q: re-read %v, %v", b, again, err)
		}
		for h, k := range keys {
			if !ValidHost(h) || !again[h].Equal(k) {
				t.Fatalf("%q: host %q", b, h)
			}
		}
	})
}

func TestATrustFileTrustsOnlyItsHostsAndIsReadAgainWhenItChanges(t *testing.T) {
	a, b := newPub(t), newPub(t)
	file := filepath.Join(t.TempDir(), "trust")
	write := func(body string) {
		t.Helper()
		testutil.WriteFile(t, file, []byte(body), 0o600)
	}
	write("a " + FormatPublicKey(a) + "\n")
	k, err := newKeyring(Config{TrustFile: file}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := k.check("a", a, false); r != 0 {
		t.Fatalf("a's own key: %v", r)
	}
	for _, c := range []struct {
		host string
		key  ed25519.PublicKey
	}{{"a", b}, {"b", b}} {
		if r, _ := k.check(c.host, c.key, true); r != ReasonUntrusted {
			t.Fatalf("%s: %v", c.host, r)
		}
	}
	write("a " + FormatPublicKey(a) + "\nb " + FormatPublicKey(b) + "\n")
	k.checked = time.Time{} // as if trustReload had passed
	if r, _ := k.check("b", b, false); r != 0 {
		t.Fatalf("b after the file listed it: %v", r)
	}
	// A change that does not parse leaves the keys as they were.
	write("b nonsense\n")
	k.checked = time.Time{}
	if r, _ := k.check("b", b, false); r != 0 {
		t.Fatalf("b after a broken edit: %v", r)
	}
	// A broken file at start is an error naming the line.
	if _, err := newKeyring(Config{TrustFile: file}, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("broken trust file: %v", err)
	}
	// Writable by others: refused.
	write("a " + FormatPublicKey(a) + "\n")
	if err := os.Chmod(file, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := newKeyring(Config{TrustFile: file}, slog.New(slog.DiscardHandler)); !errors.Is(err, safefile.ErrLooseMode) {
		t.Fatalf("a world-writable trust file: %v", err)
	}
}

func TestWithoutATrustFileAHostsFirstKeyIsPinnedAndAnotherRefused(t *testing.T) {
	state := t.TempDir()
	a, other := newPub(t), newPub(t)
	k, err := newKeyring(Config{StateDir: state}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if r, known := k.check("a", a, false); r != ReasonUntrusted || known {
		t.Fatalf("an envelope pinned a: %v %v", r, known)
	}
	if r, _ := k.check("a", a, true); r != 0 {
		t.Fatalf("first use: %v", r)
	}
	if r, _ := k.check("a", other, true); r != ReasonUntrusted {
		t.Fatalf("a new key for a: %v", r)
	}
	pins := filepath.Join(state, "federation", "known-hosts")
	if fi, err := os.Lstat(pins); err != nil || fi.Mode() != 0o600 {
		t.Fatalf("pins file: %v, %v", fi, err)
	}
	// A restart remembers the pin.
	k, err = newKeyring(Config{StateDir: state}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := k.check("a", other, true); r != ReasonUntrusted {
		t.Fatalf("after a restart, a new key for a: %v", r)
	}
	if r, _ := k.check("a", a, false); r != 0 {
		t.Fatalf("after a restart, a's key: %v", r)
	}
}
