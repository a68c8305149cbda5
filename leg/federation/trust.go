package federation

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/safefile"
)

// A trust file pins host keys, one host a line:
//
//	# comments and blank lines are skipped
//	laptop   ed25519:BASE64URL
//	build-1  ed25519:BASE64URL
//
// A host appears once. The file the gateway pins keys into on first use
// (known-hosts, without --federation-trust) has the same form.
const (
	maxTrustFile  = 256 << 10
	maxTrustHosts = 4096
)

// ParseTrust reads a trust file's text; an error names the line.
func ParseTrust(b []byte) (map[string]ed25519.PublicKey, error) {
	if len(b) > maxTrustFile {
		return nil, fmt.Errorf("over %d bytes", maxTrustFile)
	}
	keys := map[string]ed25519.PublicKey{}
	n := 0
	for line := range bytes.Lines(b) {
		n++
		s := strings.TrimSpace(string(line))
		if s == "" || s[0] == '#' {
			continue
		}
		f := strings.Fields(s)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want HOST ed25519:KEY, got %d fields", n, len(f))
		}
		if !ValidHost(f[0]) {
			return nil, fmt.Errorf("line %d: %.70q is not a host name (a-z 0-9 -)", n, f[0])
		}
		k, err := ParsePublicKey(f[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if _, dup := keys[f[0]]; dup {
			return nil, fmt.Errorf("line %d: host %s is listed twice", n, f[0])
		}
		if len(keys) == maxTrustHosts {
			return nil, fmt.Errorf("line %d: more than %d hosts", n, maxTrustHosts)
		}
		keys[f[0]] = k
	}
	return keys, nil
}

func formatTrust(keys map[string]ed25519.PublicKey) []byte {
	hosts := make([]string, 0, len(keys))
	for h := range keys {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	b := []byte("# host keys pinned on first use; delete a line to accept that host's new key\n")
	for _, h := range hosts {
		b = fmt.Appendf(b, "%s %s\n", h, FormatPublicKey(keys[h]))
	}
	return b
}

// trustReload is how often the trust file is looked at for a change.
const trustReload = 2 * time.Second

// keyring answers whose key a host's is. With a trust file it knows the
// hosts listed there and no other, and follows the file's changes; without
// one it pins each host's key the first time it is seen (in memory and,
// with a state directory, in a file) and refuses any other key for it.
type keyring struct {
	log  *slog.Logger
	file string // the trust file, or ""
	pins string // the pinned-on-first-use file, or ""
	clk  clock.Clock

	mu      sync.Mutex
	keys    map[string]ed25519.PublicKey
	stat    fs.FileInfo // the trust file's as last read
	checked time.Time
	refused map[string]bool // host/key refused already: logged once
}

func newKeyring(cfg Config, log *slog.Logger) (*keyring, error) {
	k := &keyring{log: log, file: cfg.TrustFile, clk: clock.Or(cfg.Clock), refused: map[string]bool{}}
	if k.file != "" {
		keys, fi, err := readTrust(k.file)
		if err != nil {
			return nil, err
		}
		k.keys, k.stat, k.checked = keys, fi, k.clk.Now()
		return k, nil
	}
	k.keys = map[string]ed25519.PublicKey{}
	if cfg.StateDir == "" {
		return k, nil // pins live as long as the process
	}
	k.pins = filepath.Join(cfg.StateDir, "federation", "known-hosts")
	b, err := safefile.ReadCapped(k.pins, maxTrustFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("federation: pinned host keys: %w", err)
	default:
		if k.keys, err = ParseTrust(b); err != nil {
			return nil, fmt.Errorf("federation: pinned host keys %s: %w", k.pins, err)
		}
	}
	return k, nil
}

func readTrust(file string) (map[string]ed25519.PublicKey, fs.FileInfo, error) {
	b, err := safefile.ReadOwnerWritable(file, maxTrustFile)
	if err != nil {
		return nil, nil, fmt.Errorf("federation: trust file: %w", err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		return nil, nil, fmt.Errorf("federation: trust file: %w", err)
	}
	keys, err := ParseTrust(b)
	if err != nil {
		return nil, nil, fmt.Errorf("federation: trust file %s: %w", file, err)
	}
	return keys, fi, nil
}

// check reports whether key is host's: 0, or ReasonUntrusted for a host
// the trust file does not list or whose pinned key is another. A host
// without a key yet is pinned to key when pin is true (first use, from a
// roster entry: only that host may put it, where the server enforces
// subject permissions); when pin is false known is false, and the caller
// may look for the host's roster entry and ask again.
func (k *keyring) check(host string, key ed25519.PublicKey, pin bool) (r Reason, known bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.reload()
	want, ok := k.keys[host]
	switch {
	case ok && want.Equal(key):
		return 0, true
	case !ok && k.file == "" && !pin:
		return ReasonUntrusted, false
	case !ok && k.file == "" && len(k.keys) < maxTrustHosts:
		k.pin(host, key)
		return 0, true
	}
	if id := host + " " + FormatPublicKey(key); !k.refused[id] && len(k.refused) < maxTrustHosts {
		k.refused[id] = true
		if ok {
			k.log.Warn("refused a host key that is not the one pinned for this host", "from_host", host, "key", FormatPublicKey(key), "pinned", FormatPublicKey(want))
		} else {
			k.log.Warn("refused a host the trust file does not list", "from_host", host, "key", FormatPublicKey(key))
		}
	}
	return ReasonUntrusted, true
}

// pin trusts key for host from now on. Called with mu held.
func (k *keyring) pin(host string, key ed25519.PublicKey) {
	k.keys[host] = key
	k.log.Info("pinned a new host's key on first use", "from_host", host, "key", FormatPublicKey(key))
	if k.pins == "" {
		return
	}
	if err := safefile.EnsureDir(filepath.Dir(k.pins)); err != nil {
		k.log.Warn("pinned host key not saved", "err", err)
		return
	}
	if err := safefile.WriteAtomic(k.pins, formatTrust(k.keys)); err != nil {
		k.log.Warn("pinned host key not saved", "err", err)
	}
}

// reload reads the trust file again when it changed, at most every
// trustReload; a file that no longer parses leaves the last good keys in
// force. Called with mu held.
func (k *keyring) reload() {
	if k.file == "" || k.clk.Now().Sub(k.checked) < trustReload {
		return
	}
	k.checked = k.clk.Now()
	fi, err := os.Stat(k.file)
	if err != nil || os.SameFile(fi, k.stat) && fi.Size() == k.stat.Size() && fi.ModTime().Equal(k.stat.ModTime()) {
		return // gone (being replaced, say) or unchanged: the keys stay
	}
	k.stat = fi
	keys, _, err := readTrust(k.file)
	if err != nil {
		k.log.Error("the trust file changed and does not read; the keys read before stay in force", "err", err)
		return
	}
	k.keys = keys
	clear(k.refused)
	k.log.Info("trust file read again", "hosts", len(keys))
}
