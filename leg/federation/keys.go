package federation

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/sessiongateway/gateway/internal/safefile"
)

// A host key is an ed25519 key pair. Its public half is written
// "ed25519:" followed by the 32 bytes in unpadded URL-safe base64 (one
// token, 51 characters); the key file holds the 32-byte seed the same way
// after "ed25519-seed:", so it cannot be mistaken for a NATS nkey seed:
// the host key signs envelopes and nothing else.
const (
	pubPrefix  = "ed25519:"
	seedPrefix = "ed25519-seed:"
	maxKeyFile = 4 << 10
)

// KeyFile is where the host key lives in stateDir unless
// --federation-key says otherwise.
func KeyFile(stateDir string) string { return filepath.Join(stateDir, "federation", "host.key") }

// FormatPublicKey is pub's text form, ed25519:BASE64URL.
func FormatPublicKey(pub ed25519.PublicKey) string {
	return pubPrefix + base64.RawURLEncoding.EncodeToString(pub)
}

// ParsePublicKey reads FormatPublicKey's form.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	rest, ok := strings.CutPrefix(s, pubPrefix)
	if !ok {
		return nil, fmt.Errorf("public key %.60q: want %sBASE64", s, pubPrefix)
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("public key %.60q: not %d bytes of unpadded URL-safe base64", s, ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

func formatSeed(k ed25519.PrivateKey) []byte {
	return fmt.Appendf(nil, "# gateway federation host key: secret, never share it.\n# public key: %s\n%s%s\n",
		FormatPublicKey(k.Public().(ed25519.PublicKey)), seedPrefix, base64.RawURLEncoding.EncodeToString(k.Seed()))
}

func parseSeed(b []byte) (ed25519.PrivateKey, error) {
	for line := range bytes.Lines(b) {
		s := strings.TrimSpace(string(line))
		if s == "" || s[0] == '#' {
			continue
		}
		rest, ok := strings.CutPrefix(s, seedPrefix)
		if !ok {
			return nil, fmt.Errorf("not a host key: want a line %sBASE64", seedPrefix)
		}
		seed, err := base64.RawURLEncoding.DecodeString(rest)
		if err != nil || len(seed) != ed25519.SeedSize {
			return nil, errors.New("not a host key: the seed is not 32 bytes of unpadded URL-safe base64")
		}
		return ed25519.NewKeyFromSeed(seed), nil
	}
	return nil, errors.New("not a host key: no seed line")
}

// LoadKey reads the host key at file: a regular file, not a symlink, with
// no permission bits for group or others.
func LoadKey(file string) (ed25519.PrivateKey, error) {
	b, _, err := safefile.ReadSecret(file, maxKeyFile, nil)
	if err != nil {
		return nil, fmt.Errorf("federation: host key: %w", err)
	}
	k, err := parseSeed(b)
	if err != nil {
		return nil, fmt.Errorf("federation: host key %s: %w", file, err)
	}
	return k, nil
}

// ErrKeyExists is Keygen refusing to replace a host key without force.
var ErrKeyExists = errors.New("a host key is already there (--force replaces it, and every other host must then pin the new public key)")

// Keygen writes a new host key to file (mode 0600, its directory made
// 0700, never through a symlink) and returns its public key. Without
// force it refuses when anything is already at file.
func Keygen(file string, force bool) (string, error) {
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return "", err
	}
	if err := safefile.EnsureDir(filepath.Dir(file)); err != nil {
		return "", fmt.Errorf("federation: host key directory: %w", err)
	}
	write := safefile.CreateExclusive
	if force {
		write = safefile.WriteAtomic
	}
	if err := write(file, formatSeed(priv)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("federation: %s: %w", file, ErrKeyExists)
		}
		return "", fmt.Errorf("federation: host key: %w", err)
	}
	return FormatPublicKey(priv.Public().(ed25519.PublicKey)), nil
}

// loadOrCreateKey is serve's host key: file's, or a new one written there
// on first use (created reports that, for the log).
func loadOrCreateKey(file string) (k ed25519.PrivateKey, created bool, err error) {
	k, err = LoadKey(file)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, false, err
	}
	if _, err := Keygen(file, false); err != nil && !errors.Is(err, ErrKeyExists) {
		return nil, false, err
	}
	k, err = LoadKey(file)
	return k, err == nil, err
}

// loadKeys sets the node's signer and keyring up as cfg says.
func (n *Node) loadKeys() error {
	k, file := n.cfg.Key, n.cfg.KeyFile
	if file == "" && n.cfg.StateDir != "" {
		file = KeyFile(n.cfg.StateDir)
	}
	switch {
	case k != nil:
	case file != "":
		var created bool
		var err error
		if k, created, err = loadOrCreateKey(file); err != nil {
			return err
		}
		if created {
			n.log.Info("federation host key created; other hosts pin this public key", "file", file, "public_key", FormatPublicKey(k.Public().(ed25519.PublicKey)))
		}
	default:
		_, k, _ = ed25519.GenerateKey(nil)
		n.log.Info("federation host key for this process only", "public_key", FormatPublicKey(k.Public().(ed25519.PublicKey)))
	}
	n.signer = newSigner(k, n.cfg.Clock)
	var err error
	n.keys, err = newKeyring(n.cfg, n.log)
	return err
}

// PublicKey is this host's public key, as other hosts pin it.
func (n *Node) PublicKey() string { return n.signer.pub }
