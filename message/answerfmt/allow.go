package answerfmt

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sessiongateway/gateway/message"
)

// AllowOptions are what an allow carries besides its verdict, as the
// flags of `gateway allow` and the options of the approver's allow reply
// spell them: both read them here, so they accept the same things.
type AllowOptions struct {
	Input       string   // --input: the edited tool input, a JSON object
	Rules       []string // --rule: Tool or Tool(content), repeatable
	Destination string   // --rule-destination: where the rules are saved
	Suggestions []string // --suggestion N: the prompt's suggestion N (from 1), repeatable
	Mode        string   // --mode: the permission mode to switch to (plan approval)
}

// Answer checks o and builds the allow answer it stands for, by by.
func (o AllowOptions) Answer(by string) (message.PermissionAnswer, error) {
	a := message.PermissionAnswer{Behavior: message.BehaviorAllow, By: by, RuleDestination: o.Destination, Mode: o.Mode}
	if o.Input != "" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(o.Input), &obj); err != nil || obj == nil {
			return a, fmt.Errorf(`--input must be a JSON object, such as '{"command":"ls"}'`)
		}
		a.UpdatedInput = json.RawMessage(o.Input)
	}
	for _, r := range o.Rules {
		rule, err := message.ParseRule(r)
		if err != nil {
			return a, fmt.Errorf("--rule %v", err)
		}
		a.Rules = append(a.Rules, rule)
	}
	if o.Destination != "" && !slices.Contains(message.RuleDestinations, o.Destination) {
		return a, fmt.Errorf("--rule-destination %q: want one of %s", o.Destination, strings.Join(message.RuleDestinations, ", "))
	}
	for _, s := range o.Suggestions {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return a, fmt.Errorf("--suggestion %q: want a suggestion's number, from 1, as the prompt lists them", s)
		}
		a.Suggestions = append(a.Suggestions, n)
	}
	if o.Mode != "" && !message.ValidPermissionMode(o.Mode) {
		return a, fmt.Errorf("--mode %q: want one of %s", o.Mode, strings.Join(message.PermissionModes, ", "))
	}
	return a, nil
}

// args writes o as the reply options ParseReply reads back.
func (o AllowOptions) args() []string {
	var out []string
	add := func(name, value string) { out = append(out, "--"+name, ShellWord(value)) }
	for _, s := range o.Suggestions {
		add("suggestion", s)
	}
	if o.Mode != "" {
		add("mode", o.Mode)
	}
	for _, r := range o.Rules {
		add("rule", r)
	}
	if o.Destination != "" {
		add("rule-destination", o.Destination)
	}
	if o.Input != "" {
		add("input", o.Input)
	}
	return out
}

// set takes one option of an allow reply; false for a name allow does not
// take.
func (o *AllowOptions) set(name, value string) bool {
	switch name {
	case "suggestion":
		o.Suggestions = append(o.Suggestions, value)
	case "mode":
		o.Mode = value
	case "rule":
		o.Rules = append(o.Rules, value)
	case "rule-destination":
		o.Destination = value
	case "input":
		o.Input = value
	default:
		return false
	}
	return true
}
