package fakeanthropic

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Reply is what the fake model answers: text and tool_use blocks, in order.
type Reply struct {
	Content []Block
	// StopReason defaults to "tool_use" when Content holds a tool_use block,
	// else "end_turn".
	StopReason string
	// Status, when not zero, answers with this HTTP status and an API error
	// body carrying ErrorMessage instead of a message.
	Status       int
	ErrorMessage string
	// Hold, when not nil, delays the answer until it is closed (or the client
	// gives up), so a test can keep a session busy in a turn for as long as
	// it needs without a timer.
	Hold <-chan struct{}
}

// Text answers with one text block.
func Text(s string) Reply { return Reply{Content: []Block{{Type: "text", Text: s}}} }

// ToolUse answers with one call of the named tool. inputJSON must be a JSON
// object; anything else is a mistake in the test and panics, as
// regexp.MustCompile does.
func ToolUse(name, inputJSON string) Reply {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(inputJSON), &obj); err != nil || obj == nil {
		panic(fmt.Sprintf("fakeanthropic.ToolUse(%q): input is not a JSON object: %q", name, inputJSON))
	}
	return Reply{Content: []Block{{Type: "tool_use", Name: name, Input: json.RawMessage(inputJSON)}}}
}

// Error answers with an HTTP error status and the API's error body.
func Error(status int, msg string) Reply { return Reply{Status: status, ErrorMessage: msg} }

// Then appends the blocks of next, so Text("looking").Then(ToolUse(...))
// is one answer with two blocks.
func (r Reply) Then(next Reply) Reply {
	r.Content = append(append([]Block(nil), r.Content...), next.Content...)
	if next.StopReason != "" {
		r.StopReason = next.StopReason
	}
	return r
}

func (r Reply) stopReason() string {
	if r.StopReason != "" {
		return r.StopReason
	}
	for _, b := range r.Content {
		if b.Type == "tool_use" {
			return "tool_use"
		}
	}
	return "end_turn"
}

// Script decides the answer to each request. It runs on the server's handler
// goroutines, possibly several at once, so it must be safe for that; the
// ready-made scripts here keep no state and read progress from the request.
type Script func(req Request) Reply

// Always answers every request with r.
func Always(r Reply) Script { return func(Request) Reply { return r } }

// Rule answers a request it recognises. at is the index of the message it
// answers; ok is false for a request it does not recognise.
type Rule func(req Request) (reply Reply, at int, ok bool)

// Rules answers with the rule that recognises the newest message, so a later
// trigger takes over from an earlier one that has finished, and with fallback
// when no rule applies. Ties go to the rule listed first.
func Rules(fallback Reply, rules ...Rule) Script {
	return func(req Request) Reply {
		best, bestAt := fallback, -1
		for _, rule := range rules {
			if r, at, ok := rule(req); ok && at > bestAt {
				best, bestAt = r, at
			}
		}
		return best
	}
}

// Call is one tool call a rule makes.
type Call struct {
	Tool  string
	Input string // a JSON object
}

// CallTools is a rule for the newest user message containing trigger: it
// makes each call in turn, one per request, then answers with the text then.
// Progress is read from the conversation the client sends (the tool_use
// blocks after that user message), so the calls happen once per trigger
// message even when the client retries. Once the calls are made, the rule
// answers only while the conversation still ends in that exchange (a tool
// result); a later turn, such as a delivered peer message, goes to the other
// rules. Requests that offer no tools (the client's own side queries) are left
// to other rules too.
func CallTools(trigger string, calls []Call, then string) Rule {
	for _, c := range calls {
		ToolUse(c.Tool, c.Input) // validate now, in the test's goroutine
	}
	return func(req Request) (Reply, int, bool) {
		if len(req.Tools) == 0 {
			return Reply{}, 0, false
		}
		at := lastUserWith(req.Messages, trigger)
		if at < 0 {
			return Reply{}, 0, false
		}
		made := 0
		for _, m := range req.Messages[at+1:] {
			if m.Role != "assistant" {
				continue
			}
			for _, b := range m.Content {
				if b.Type == "tool_use" {
					made++
				}
			}
		}
		if made < len(calls) {
			return ToolUse(calls[made].Tool, calls[made].Input), at, true
		}
		if at != len(req.Messages)-1 && !onlyToolResults(req.Messages[len(req.Messages)-1]) {
			return Reply{}, 0, false
		}
		return Text(then), at, true
	}
}

// CallToolOnce is the ready script for the common case: on a user message
// containing trigger, call tool with input once, then answer with then. Any
// other request gets Text("ok").
func CallToolOnce(trigger, tool, input, then string) Script {
	return Rules(Text("ok"), CallTools(trigger, []Call{{Tool: tool, Input: input}}, then))
}

// lastUserWith finds the newest user message whose own text (not a tool
// result) contains s.
func lastUserWith(msgs []Message, s string) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		for _, b := range msgs[i].Content {
			if b.Type == "text" && strings.Contains(b.Text, s) {
				return i
			}
		}
	}
	return -1
}

// onlyToolResults reports whether m is a user message answering tool calls and
// nothing else (the client may add system reminders as text; those count as
// part of the answer).
func onlyToolResults(m Message) bool {
	if m.Role != "user" {
		return false
	}
	results := 0
	for _, b := range m.Content {
		switch {
		case b.Type == "tool_result":
			results++
		case b.Type == "text" && strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>"):
		default:
			return false
		}
	}
	return results > 0
}
