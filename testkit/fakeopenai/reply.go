package fakeopenai

import (
	"encoding/json"
	"fmt"
	"strings"
)

// SendMessageTool is the tool Qwen Code offers its model for messaging
// another session: arguments {"to": "<name>", "message": "<text>"}.
const SendMessageTool = "send_message"

// Reply is what the fake model answers: text, tool calls, or both.
type Reply struct {
	Text      string
	ToolCalls []ToolCall
	// FinishReason defaults to "tool_calls" when the reply makes a call,
	// else "stop".
	FinishReason string
	// Status, when not zero, answers with this HTTP status and an API error
	// body carrying ErrorMessage instead of a completion.
	Status       int
	ErrorMessage string
	// Hold, when not nil, delays the answer until it is closed (or the client
	// gives up), so a test can keep a session busy in a turn for as long as
	// it needs without a timer.
	Hold <-chan struct{}
}

// Text answers with text.
func Text(s string) Reply { return Reply{Text: s} }

// Call answers with one call of the named function. argsJSON must be a JSON
// object; anything else is a mistake in the test and panics, as
// regexp.MustCompile does.
func Call(name, argsJSON string) Reply {
	mustObject(name, argsJSON)
	return Reply{ToolCalls: []ToolCall{{Type: "function", Function: FunctionCall{Name: name, Arguments: argsJSON}}}}
}

// SendMessage answers with a send_message call to the session named to.
func SendMessage(to, message string) Reply {
	return Call(SendMessageTool, sendMessageArgs(to, message))
}

func sendMessageArgs(to, message string) string {
	b, _ := json.Marshal(map[string]string{"to": to, "message": message})
	return string(b)
}

func mustObject(name, argsJSON string) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(argsJSON), &obj); err != nil || obj == nil {
		panic(fmt.Sprintf("fakeopenai: arguments of %s are not a JSON object: %q", name, argsJSON))
	}
}

// Error answers with an HTTP error status and the API's error body.
func Error(status int, msg string) Reply { return Reply{Status: status, ErrorMessage: msg} }

// Then appends next's text and calls, so Text("looking").Then(SendMessage(...))
// is one answer with text and a call.
func (r Reply) Then(next Reply) Reply {
	r.Text += next.Text
	r.ToolCalls = append(append([]ToolCall(nil), r.ToolCalls...), next.ToolCalls...)
	if next.FinishReason != "" {
		r.FinishReason = next.FinishReason
	}
	return r
}

func (r Reply) finishReason() string {
	switch {
	case r.FinishReason != "":
		return r.FinishReason
	case len(r.ToolCalls) > 0:
		return "tool_calls"
	default:
		return "stop"
	}
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

// FunctionCallSpec is one call a rule makes.
type FunctionCallSpec struct {
	Name      string
	Arguments string // a JSON object
}

// SendMessageCall is the call of send_message to the session named to.
func SendMessageCall(to, message string) FunctionCallSpec {
	return FunctionCallSpec{Name: SendMessageTool, Arguments: sendMessageArgs(to, message)}
}

// CallTools is a rule for the newest user message containing trigger: it
// makes each call in turn, one per request, then answers with the text then.
// Progress is read from the conversation the client sends (the tool calls
// after that user message), so the calls happen once per trigger message
// even when the client retries. Once the calls are made, the rule answers
// only while the conversation still ends in that exchange (a tool result); a
// later turn, such as a delivered peer message, goes to the other rules.
// Requests that offer no tools (the client's side queries) are left to other
// rules too.
//
// A delivered peer message is a user message, so a trigger inside one makes
// the receiving session answer it, with a send_message call for instance.
func CallTools(trigger string, calls []FunctionCallSpec, then string) Rule {
	for _, c := range calls {
		mustObject(c.Name, c.Arguments) // validate now, in the test's goroutine
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
			if m.Role == "assistant" {
				made += len(m.ToolCalls)
			}
		}
		if made < len(calls) {
			return Call(calls[made].Name, calls[made].Arguments), at, true
		}
		if last := len(req.Messages) - 1; at != last && req.Messages[last].Role != "tool" {
			return Reply{}, 0, false
		}
		return Text(then), at, true
	}
}

// CallToolOnce is the ready script for the common case: on a user message
// containing trigger, make call once, then answer with then. Any other
// request gets Text("ok").
func CallToolOnce(trigger string, call FunctionCallSpec, then string) Script {
	return Rules(Text("ok"), CallTools(trigger, []FunctionCallSpec{call}, then))
}

// lastUserWith finds the newest user message whose text contains s.
func lastUserWith(msgs []Message, s string) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && strings.Contains(msgs[i].Text(), s) {
			return i
		}
	}
	return -1
}
