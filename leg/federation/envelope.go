package federation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sessiongateway/gateway/message"
)

// Version is the envelope version this gateway writes and reads.
const Version = 1

// MaxEnvelope caps what is read from NATS (and written to it), in bytes.
const MaxEnvelope = 1 << 20

const maxID = 256 // a message id, in bytes

type kind string

const (
	kindMessage kind = "message"
	kindReceipt kind = "receipt"
	// kindReceipts carries several receipts for one host, in the order
	// they were settled: a busy host sends one envelope (one publish, one
	// signature, one ack) per batch.
	kindReceipts kind = "receipts"
	kindPrompts  kind = "prompts" // a host's prompt list, in the prompts bucket (prompts.go)
	kindAnswer   kind = "answer"  // an answer to a prompt of the host it goes to
	kindOutcome  kind = "outcome" // what became of an answer, back to where it came from
)

// envelope is what travels on the federation's subjects.
type envelope struct {
	V       int              `json:"v"`
	Kind    kind             `json:"kind"`
	From    string           `json:"from_host"`
	To      string           `json:"to_host"`
	Message *message.Message `json:"message,omitempty"`
	Receipt *message.Receipt `json:"receipt,omitempty"`
	// Receipts (kindReceipts), at most maxReceiptBatch.
	Receipts []message.Receipt           `json:"receipts,omitempty"`
	Prompts  []message.PermissionRequest `json:"prompts,omitempty"`
	Answer   *promptAnswer               `json:"answer,omitempty"`
	Outcome  *answerOutcome              `json:"outcome,omitempty"`
	seal                                 // signed by the host From names
}

// Reason is why something read from NATS was dropped.
type Reason uint8

const (
	ReasonOversized Reason = iota + 1 // over MaxEnvelope
	ReasonMalformed                   // not an envelope: bad JSON, missing or invalid fields
	ReasonVersion                     // an envelope version this gateway does not read
	ReasonMisrouted                   // addressed to another host than the subject's
	ReasonSignature                   // unsigned, or the signature does not check out
	ReasonUntrusted                   // signed by a key that is not the one trusted for its origin host
	ReasonReplayed                    // signed outside the replay window, or a copy of one already read
	reasonCount
)

var reasonWire = [...]string{
	ReasonOversized: "oversized", ReasonMalformed: "malformed",
	ReasonVersion: "unknown-version", ReasonMisrouted: "misrouted",
	ReasonSignature: "signature", ReasonUntrusted: "untrusted", ReasonReplayed: "replayed",
}

func (r Reason) String() string {
	if r > 0 && r < reasonCount {
		return reasonWire[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// drops counts what was dropped, by reason.
type drops [reasonCount]atomic.Uint64

func (d *drops) add(r Reason) { d[r].Add(1) }

func (d *drops) snapshot() map[Reason]uint64 {
	m := map[Reason]uint64{}
	for r := Reason(1); r < reasonCount; r++ {
		if n := d[r].Load(); n > 0 {
			m[r] = n
		}
	}
	return m
}

// encode is e as this host sends it: versioned, signed, within the cap.
func (n *Node) encode(e envelope) ([]byte, error) { return n.signer.envelope(e) }

func (sg *signer) envelope(e envelope) ([]byte, error) {
	e.V = Version
	b, err := sg.sign(domainEnvelope, &e, &e.seal)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxEnvelope {
		return nil, fmt.Errorf("federation: the message is %d bytes, over the %d-byte cap", len(b), MaxEnvelope)
	}
	return b, nil
}

// decode reads msg, an envelope from NATS for this host, or says why not:
// well formed, signed by the key pinned for its origin host within the
// replay window, and not a copy of one read before.
func (n *Node) decode(msg jetstream.Msg) (envelope, Reason) {
	e, r := parse(msg.Data(), n.cfg.Host)
	if r != 0 {
		return envelope{}, r
	}
	stored, seq := n.now(), uint64(0)
	if md, err := msg.Metadata(); err == nil {
		stored, seq = md.Timestamp, md.Sequence.Stream
	}
	if r := n.checkSeal(domainEnvelope, &e, &e.seal, e.From, stored, false); r != 0 {
		return envelope{}, r
	}
	if n.nonces.replayed(e.From, e.Nonce, seq) {
		return envelope{}, ReasonReplayed
	}
	return e, 0
}

// parse reads an envelope meant for host self, or says why not; its
// signature is decode's to check. It never panics, whatever b holds.
func parse(b []byte, self string) (envelope, Reason) {
	if len(b) > MaxEnvelope {
		return envelope{}, ReasonOversized
	}
	var head struct {
		V int `json:"v"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return envelope{}, ReasonMalformed
	}
	if head.V != Version {
		return envelope{}, ReasonVersion
	}
	var e envelope
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&e); err != nil || dec.More() {
		return envelope{}, ReasonMalformed
	}
	if !ValidHost(e.From) || !ValidHost(e.To) {
		return envelope{}, ReasonMalformed
	}
	switch e.Kind {
	case kindMessage:
		m := e.Message
		if m == nil || e.Receipt != nil || e.Receipts != nil || !validID(m.ID) || m.To == "" {
			return envelope{}, ReasonMalformed
		}
	case kindReceipt:
		r := e.Receipt
		if r == nil || e.Message != nil || e.Receipts != nil || !validReceipt(*r) {
			return envelope{}, ReasonMalformed
		}
	case kindReceipts:
		if len(e.Receipts) == 0 || len(e.Receipts) > maxReceiptBatch || e.Message != nil || e.Receipt != nil {
			return envelope{}, ReasonMalformed
		}
		for _, r := range e.Receipts {
			if !validReceipt(r) {
				return envelope{}, ReasonMalformed
			}
		}
	case kindPrompts, kindAnswer, kindOutcome:
		if e.Message != nil || e.Receipt != nil || e.Receipts != nil || !validPromptEnvelope(e) {
			return envelope{}, ReasonMalformed
		}
	default:
		return envelope{}, ReasonMalformed
	}
	if e.To != self {
		return envelope{}, ReasonMisrouted
	}
	return e, 0
}

func validID(id string) bool { return id != "" && len(id) <= maxID }

func validReceipt(r message.Receipt) bool { return validID(r.MsgID) && r.Status != 0 }

// resign signs again, with a fresh time and nonce, an envelope this host
// encoded earlier: a send kept while the link was down must be signed
// when it is published, or a receiver takes it for a replay once it is
// older than the replay window.
func (n *Node) resign(b []byte) ([]byte, error) {
	var e envelope
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("federation: a kept send does not read: %w", err)
	}
	if e.From != n.cfg.Host {
		return nil, fmt.Errorf("federation: a kept send from host %q, not this one", e.From)
	}
	return n.encode(e)
}
