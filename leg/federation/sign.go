package federation

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/jsonx"
)

// DefaultReplayWindow is how far the time an envelope was signed may lie
// from the time the stream stored it. An envelope signed longer before
// (or after: a clock far off) is dropped as replayed. Inside the window a
// copy is told from the original by its nonce, and a message id by the
// settled window, so it is never delivered twice.
const DefaultReplayWindow = 5 * time.Minute

// seal makes an envelope or a roster entry its origin host's: ed25519
// over the RFC 8785 (JCS) form of the JSON without sig, after a domain
// string saying what is signed, so a signature over one kind of thing is
// never good for another.
type seal struct {
	Key      string `json:"key"`       // the signer's public key, ed25519:...
	SignedAt int64  `json:"signed_at"` // unix milliseconds, by the signer's clock
	Nonce    string `json:"nonce"`     // random: a copy of this envelope has the same one
	Sig      string `json:"sig,omitempty"`
}

const maxNonce = 64

const (
	domainEnvelope = "gateway federation envelope v1\n"
	domainRoster   = "gateway federation roster v1\n"
)

// signer signs with this host's key.
type signer struct {
	key ed25519.PrivateKey
	pub string
	now func() time.Time
}

func newSigner(k ed25519.PrivateKey, clk clock.Clock) *signer {
	return &signer{key: k, pub: FormatPublicKey(k.Public().(ed25519.PublicKey)), now: clk.Now}
}

// sign fills s (a field of v) and returns v's JSON, signed.
func (sg *signer) sign(domain string, v any, s *seal) ([]byte, error) {
	var nonce [16]byte
	_, _ = cryptoRand(nonce[:])
	*s = seal{Key: sg.pub, SignedAt: sg.now().UnixMilli(), Nonce: hex.EncodeToString(nonce[:])}
	c, err := canonical(v)
	if err != nil {
		return nil, err
	}
	s.Sig = base64.RawURLEncoding.EncodeToString(ed25519.Sign(sg.key, append([]byte(domain), c...)))
	return jsonx.Marshal(v)
}

func canonical(v any) ([]byte, error) {
	b, err := jsonx.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(b)
}

// verify checks that s (a field of v, as decoded) signs v and returns the
// signer's key. What is checked is v as this host reads it, re-encoded:
// nothing it acts on can lie outside the signature.
func verify(domain string, v any, s *seal) (ed25519.PublicKey, Reason) {
	key, err := ParsePublicKey(s.Key)
	if err != nil || s.Nonce == "" || len(s.Nonce) > maxNonce {
		return nil, ReasonSignature
	}
	sig, err := base64.RawURLEncoding.DecodeString(s.Sig)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, ReasonSignature
	}
	saved := s.Sig
	s.Sig = ""
	c, err := canonical(v)
	s.Sig = saved
	if err != nil || !ed25519.Verify(key, append([]byte(domain), c...), sig) {
		return nil, ReasonSignature
	}
	return key, 0
}

// checkSeal is the one road in for what other hosts signed: s signs v, it
// was signed within the replay window of stored (when the stream stored
// it, by the server's clock) and its key is the one host's is pinned to.
// A roster entry (pin) may pin a new host's key on first use: only that
// host may put it, where the server enforces subject permissions, and it
// is put afresh at every join. Anything else from a host not pinned yet
// is checked against that host's roster entry, read from the bucket.
func (n *Node) checkSeal(domain string, v any, s *seal, host string, stored time.Time, pin bool) Reason {
	key, r := verify(domain, v, s)
	if r != 0 {
		return r
	}
	if d := stored.Sub(time.UnixMilli(s.SignedAt)); d > n.cfg.ReplayWindow || d < -n.cfg.ReplayWindow {
		return ReasonReplayed
	}
	r, known := n.keys.check(host, key, pin)
	if !known && n.learnHost(host) {
		r, _ = n.keys.check(host, key, false)
	}
	return r
}

// learnHost reads host's roster entry from the bucket and takes it as if
// heard, pinning its key; it reports whether there was one. A host found
// missing is not looked for again for a while: a flood of envelopes in an
// unknown host's name costs one read, not one each.
func (n *Node) learnHost(host string) bool {
	if n.roster == nil || !ValidHost(host) {
		return false
	}
	if at, ok := n.missing.Get(host); ok && n.now().Sub(at) < missingFor {
		return false
	}
	ctx, cancel := context.WithTimeout(n.ctx, 2*time.Second)
	defer cancel()
	e, err := n.roster.Get(ctx, host)
	if err != nil {
		n.missing.Put(host, n.now())
		return false
	}
	n.heard(e)
	return true
}

// missingFor is how long a host found without a roster entry is not
// looked for again.
const missingFor = 2 * time.Second

// nonces remembers the envelopes read, by origin and nonce, with the
// stream sequence each came in: the same stream message offered again is
// a redelivery, another one with the same nonce a replay.
type nonces struct{ m *bounded.Map[string, uint64] }

func newNonces() nonces { return nonces{bounded.NewMap[string, uint64](settledWindow)} }

// replayed records origin's nonce as read at seq and reports whether it
// was read before at another.
func (ns nonces) replayed(origin, nonce string, seq uint64) bool {
	key := origin + "/" + nonce
	if at, ok := ns.m.Get(key); ok {
		return at != seq
	}
	ns.m.Put(key, seq)
	return false
}
