package qwen

import (
	"fmt"

	"github.com/sessiongateway/gateway/message"
)

// Policy is the agents.crossSessionInbound setting. Its wire spelling is
// the setting's value.
type Policy uint8

const (
	PolicyUnset  Policy = iota // review-class parity decides
	PolicyAccept               // deliver every message
	PolicyHold                 // hold every message for a person
	PolicyRefuse               // turn every message away (refused)
)

var policyWire = [...]string{PolicyUnset: "", PolicyAccept: "accept", PolicyHold: "hold", PolicyRefuse: "refuse"}

func (p Policy) String() string {
	if p == PolicyUnset {
		return "unset"
	}
	return wireName(policyWire[:], int(p), "policy")
}

// ParsePolicy reads a setting value; "" is PolicyUnset. Any other value is
// an error, which the guard reads as "hold, the setting is unreadable".
func ParsePolicy(s string) (Policy, error) {
	if s == "" {
		return PolicyUnset, nil
	}
	if i := wireIndex(policyWire[:], s); i > 0 {
		return Policy(i), nil
	}
	return PolicyUnset, fmt.Errorf("unknown crossSessionInbound %q (want accept, hold or refuse)", s)
}

// ReviewClassOf maps a Qwen Code approval mode to its review class: plan and
// default review each action (prompting); auto-edit, auto and yolo apply
// some without review (bypass). Any other value is unknown.
func ReviewClassOf(approvalMode string) message.Mode {
	switch approvalMode {
	case "plan", "default":
		return message.ModePrompting
	case "auto-edit", "auto", "yolo":
		return message.ModeBypass
	}
	return message.ModeUnknown
}

// HoldCause says why a message waits for a person.
type HoldCause uint8

const (
	CauseExplicitSetting  HoldCause = iota + 1 // crossSessionInbound is hold
	CauseModeMismatch                          // the sender's review class is not ours
	CauseNoModeAsserted                        // the sender named no review class
	CauseModeUnknown                           // our own review class is unknown
	CausePolicyUnreadable                      // the setting could not be read
)

var causeWire = [...]string{
	CauseExplicitSetting: "explicit-setting", CauseModeMismatch: "mode-mismatch",
	CauseNoModeAsserted: "no-mode-asserted", CauseModeUnknown: "mode-unknown",
	CausePolicyUnreadable: "policy-unreadable",
}

func (c HoldCause) String() string { return wireName(causeWire[:], int(c), "cause") }

var causeSentence = [...]string{
	CauseExplicitSetting:  "This session holds every inbound message for review",
	CauseModeMismatch:     "The sender's review class (prompting or bypass) is not this session's",
	CauseNoModeAsserted:   "The sender did not say whether it reviews its actions",
	CauseModeUnknown:      "This session's own review class is unknown",
	CausePolicyUnreadable: "This session's inbound setting could not be read",
}

// Sentence says why to the person deciding, as the Claude leg's holds do,
// ending in the cause's wire name, which Qwen Code's own tools show.
func (c HoldCause) Sentence() string {
	if int(c) < len(causeSentence) && causeSentence[c] != "" {
		return causeSentence[c] + " (" + c.String() + ")"
	}
	return c.String()
}

// policy decides accept, hold or refuse, and why a hold.
func (g *Guard) policy(in Inbound) (Policy, HoldCause) {
	to := in.Frame.ToSessionID
	var explicit Policy
	if g.cfg.Policy != nil {
		var err error
		if explicit, err = g.cfg.Policy(to); err != nil || explicit > PolicyRefuse {
			return PolicyHold, CausePolicyUnreadable
		}
	}
	switch explicit {
	case PolicyHold:
		return PolicyHold, CauseExplicitSetting
	case PolicyAccept, PolicyRefuse:
		return explicit, 0
	}
	if in.Origin.Kind == AuthChild || in.Origin.Kind == AuthController {
		return PolicyAccept, 0
	}
	own := message.ModeUnknown
	if g.cfg.ReviewClass != nil {
		own = g.cfg.ReviewClass(to)
	}
	switch {
	case own != message.ModeBypass && own != message.ModePrompting:
		return PolicyHold, CauseModeUnknown
	case in.Frame.FromMode == message.ModeUnknown:
		return PolicyHold, CauseNoModeAsserted
	case in.Frame.FromMode != own:
		return PolicyHold, CauseModeMismatch
	}
	return PolicyAccept, 0
}
