package auth

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/sessiongateway/gateway/internal/safefile"
)

// Errors from NewEd25519FileSigner, to be matched with errors.Is.
var (
	ErrKeyFileMode    = errors.New("auth: key file is readable or writable by others (want mode 0600 or stricter)")
	ErrKeyFileSymlink = errors.New("auth: key file is a symlink")
	ErrKeyFileType    = errors.New("auth: key file is not a regular file")
	ErrKeyFormat      = errors.New("auth: key file is neither a PEM PKCS#8 Ed25519 key nor a raw 32- or 64-byte key")
)

// maxKeyFile bounds what we read: a PEM Ed25519 key is about 120 bytes.
const maxKeyFile = 16 << 10

type fileSigner struct {
	priv  ed25519.PrivateKey
	keyID string
}

// NewEd25519FileSigner loads an Ed25519 private key from path, for self-hosted
// use and tests. The file must be a regular file, not a symlink, with no
// permission bits for group or others. It holds either a PEM "PRIVATE KEY"
// block (PKCS#8, as `openssl genpkey -algorithm ed25519` writes), or raw
// bytes: a 32-byte seed or a 64-byte seed||public key.
func NewEd25519FileSigner(path string) (Signer, error) {
	priv, err := loadKey(path)
	if err != nil {
		return nil, err
	}
	return &fileSigner{priv: priv, keyID: KeyID(priv.Public().(ed25519.PublicKey))}, nil
}

func loadKey(path string) (ed25519.PrivateKey, error) {
	b, _, err := safefile.ReadSecret(path, maxKeyFile, nil)
	var me *safefile.ModeError
	switch {
	case errors.As(err, &me):
		return nil, fmt.Errorf("%w: %s has mode %#o; run chmod 600 %s", ErrKeyFileMode, path, me.Mode.Perm(), path)
	case errors.Is(err, safefile.ErrSymlink):
		return nil, fmt.Errorf("%w: %s", ErrKeyFileSymlink, path)
	case errors.Is(err, safefile.ErrNotRegular):
		return nil, fmt.Errorf("%w: %s", ErrKeyFileType, path)
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrKeyFormat, path, maxKeyFile)
	case err != nil:
		return nil, fmt.Errorf("auth: key file: %w", err)
	}
	priv, err := parseKey(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrKeyFormat, path, err)
	}
	return priv, nil
}

func parseKey(b []byte) (ed25519.PrivateKey, error) {
	if trimmed := bytes.TrimLeft(b, " \t\r\n"); bytes.HasPrefix(trimmed, []byte("-----BEGIN")) {
		block, _ := pem.Decode(trimmed)
		if block == nil {
			return nil, errors.New("malformed PEM")
		}
		if block.Type != "PRIVATE KEY" {
			return nil, fmt.Errorf("PEM block is %q, want \"PRIVATE KEY\" (PKCS#8)", block.Type)
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		priv, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("PKCS#8 key is %T, not Ed25519", k)
		}
		return priv, nil
	}
	switch len(b) {
	case ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(b), nil
	case ed25519.PrivateKeySize:
		// The second half must be the public key of the first, or signatures
		// would carry a key id that does not verify them.
		priv := ed25519.NewKeyFromSeed(b[:ed25519.SeedSize])
		if !bytes.Equal(priv, b) {
			return nil, errors.New("64-byte key: public half does not match the seed")
		}
		return priv, nil
	}
	return nil, fmt.Errorf("%d bytes of raw key", len(b))
}

func (s *fileSigner) Sign(ctx context.Context, canonical []byte) (Attestation, error) {
	if err := ctx.Err(); err != nil {
		return Attestation{}, err
	}
	a := unsigned(canonical)
	a.Algorithm = AlgEd25519
	a.KeyID = s.keyID
	a.Signature = ed25519.Sign(s.priv, canonical)
	return a, nil
}
