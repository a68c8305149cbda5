package claude

import (
	"fmt"

	"github.com/sessiongateway/gateway/message"
)

// Policy is the inbound setting: what happens to a message that passed the
// guard. Unset means mode parity, the real CLI's default.
type Policy uint8

const (
	PolicyParity Policy = iota // deliver on equal modes, hold otherwise
	PolicyAccept               // deliver everything
	PolicyHold                 // hold everything for a person
	PolicyRefuse               // refuse everything (expired + status_detail refused)
)

var policyWire = [...]string{PolicyParity: "", PolicyAccept: "accept", PolicyHold: "hold", PolicyRefuse: "refuse"}

func (p Policy) String() string {
	if p == PolicyParity {
		return "parity"
	}
	return policyWire[p]
}

// ParsePolicy reads accept|hold|refuse; "" and "parity" are PolicyParity.
func ParsePolicy(s string) (Policy, error) {
	if s == "" || s == "parity" {
		return PolicyParity, nil
	}
	for i, w := range policyWire {
		if w != "" && w == s {
			return Policy(i), nil
		}
	}
	return 0, fmt.Errorf("unknown inbound policy %q (want parity, the default, accept, hold or refuse)", s)
}

type verdict uint8

const (
	verdictDeliver verdict = iota + 1
	verdictHold
	verdictRefuse
)

// decide applies the inbound policy. Self-sent messages (our childToken)
// skip the hold, like the real CLI's self-sent verdict.
func (p *Leg) decide(in *inbound, m message.Message) verdict {
	switch p.cfg.Inbound {
	case PolicyAccept:
		return verdictDeliver
	case PolicyHold:
		return verdictHold
	case PolicyRefuse:
		return verdictRefuse
	}
	if in.auth == message.AuthChild {
		return verdictDeliver
	}
	if !m.Attested || m.Mode == message.ModeUnknown {
		// Unattested senders are held only while we bypass prompts.
		if p.cfg.Mode == message.ModeBypass {
			return verdictHold
		}
		return verdictDeliver
	}
	if m.Mode == p.cfg.Mode {
		return verdictDeliver
	}
	return verdictHold
}

func (p *Leg) holdReason(m message.Message) string {
	switch {
	case p.cfg.Inbound == PolicyHold:
		return "This session holds every inbound message for review"
	case !m.Attested:
		return "The sender did not attest its permission mode and this session bypasses prompts"
	case m.Mode == message.ModeBypass:
		return "The sender bypasses permission prompts and this session does not"
	default:
		return "The sender prompts for permissions and this session bypasses prompts"
	}
}
