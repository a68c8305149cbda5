package message

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The vocabulary of answering a permission prompt: what the router's
// broker says of an answer it refuses, and what the API, the CLI, the MCP
// server and the approver read from it.

var (
	// ErrNoPermission is returned for a permission id the router does not know.
	ErrNoPermission = errors.New("no permission prompt with that id")
	// ErrPermissionSettled is returned for a prompt already answered or
	// withdrawn; the error is a *SettledError saying which and by whom.
	ErrPermissionSettled = errors.New("the permission prompt is already settled")
)

// SettledError is the router's refusal of an answer to a prompt it holds
// as settled, naming the prompt by its id; a leg's refusal from its
// session is a *PromptSettledError, which the router turns into this one.
// It matches ErrPermissionSettled.
type SettledError struct {
	ID       string
	State    PermissionState
	Behavior Behavior // the answer's verdict, when answered
	By       string   // who answered, when answered
}

func (e *SettledError) Error() string {
	if e.State == PermissionCancelled {
		return fmt.Sprintf("permission %s was withdrawn by the session", e.ID)
	}
	by := e.By
	if by == "" {
		by = "someone else"
	}
	return fmt.Sprintf("permission %s was already answered (%s) by %s", e.ID, e.Behavior, by)
}

// Is makes errors.Is(err, ErrPermissionSettled) true.
func (e *SettledError) Is(target error) bool { return target == ErrPermissionSettled }

// CheckPending is nil for a pending prompt, else the *SettledError saying
// how it was settled.
func CheckPending(req PermissionRequest) error {
	if req.State == PermissionPending {
		return nil
	}
	se := &SettledError{ID: req.ID, State: req.State}
	if req.Answer != nil {
		se.Behavior, se.By = req.Answer.Behavior, req.Answer.By
	}
	return se
}

// AnswerProblem says what is wrong with a permission answer.
type AnswerProblem uint8

const (
	AnswerBadBehavior          AnswerProblem = iota + 1 // behavior is neither allow nor deny
	AnswerDenyWithInput                                 // a deny carries updated input or answers
	AnswerInputNotObject                                // updated input is not a JSON object
	AnswerNotAQuestion                                  // answers to a prompt that is not AskUserQuestion
	AnswerUnknownQuestion                               // an answer names no question of the prompt
	AnswerMissingQuestion                               // a question of the prompt has no answer
	AnswerOneOption                                     // a single-select question needs exactly one option
	AnswerNoOption                                      // a multi-select question needs at least one option
	AnswerUnknownOption                                 // a label is not among the question's options
	AnswerRepeatedOption                                // a label is given twice
	AnswerBadRule                                       // a rule has an empty or malformed tool name
	AnswerBadDestination                                // the rule destination is not a settings scope
	AnswerQuestionNeedsAnswers                          // an allow of a question without answers
	AnswerBadSuggestion                                 // a suggestion number the prompt does not offer
	AnswerBadMode                                       // a mode switch to no permission mode
	AnswerDenyWithUpdates                               // a deny picks suggestions or switches the mode
	AnswerNotCarried                                    // the prompt's source carries only a bare allow or deny
)

var answerProblemWire = [...]string{
	AnswerBadBehavior: "bad-behavior", AnswerDenyWithInput: "deny-with-input",
	AnswerInputNotObject: "input-not-object", AnswerNotAQuestion: "not-a-question",
	AnswerUnknownQuestion: "unknown-question", AnswerMissingQuestion: "missing-question",
	AnswerOneOption: "one-option", AnswerNoOption: "no-option",
	AnswerUnknownOption: "unknown-option", AnswerRepeatedOption: "repeated-option",
	AnswerBadRule: "bad-rule", AnswerBadDestination: "bad-destination",
	AnswerQuestionNeedsAnswers: "question-needs-answers", AnswerBadSuggestion: "bad-suggestion",
	AnswerBadMode: "bad-mode", AnswerDenyWithUpdates: "deny-with-updates",
	AnswerNotCarried: "not-carried",
}

// String is p's wire spelling; one the table lacks is "answer-problem-N".
func (p AnswerProblem) String() string {
	if int(p) < len(answerProblemWire) && answerProblemWire[p] != "" {
		return answerProblemWire[p]
	}
	return fmt.Sprintf("answer-problem-%d", uint8(p))
}

// InvalidAnswerError is an answer the prompt cannot take. Valid lists what
// would be accepted (question texts or option labels) when that helps.
type InvalidAnswerError struct {
	ID      string
	Problem AnswerProblem
	Detail  string
	Valid   []string
}

func (e *InvalidAnswerError) Error() string {
	s := fmt.Sprintf("invalid answer to permission %s: %s", e.ID, e.Detail)
	if len(e.Valid) > 0 {
		q := make([]string, len(e.Valid))
		for i, v := range e.Valid {
			q[i] = strconv.Quote(v)
		}
		s += " (valid: " + strings.Join(q, ", ") + ")"
	}
	return s
}

// Updates are the permission updates an answer carries, in this order:
// its rules (one addRules update with the answer's behavior, to
// RuleDestination or "localSettings"), the suggestions it picks, as the
// session offered them, and its mode switch (setMode for the session).
// Each leg spells them as its wire does.
func (a PermissionAnswer) Updates(req PermissionRequest) []PermissionUpdate {
	var out []PermissionUpdate
	if len(a.Rules) > 0 {
		dest := a.RuleDestination
		if dest == "" {
			dest = "localSettings"
		}
		out = append(out, PermissionUpdate{Type: UpdateAddRules, Rules: a.Rules, Behavior: string(a.Behavior), Destination: dest})
	}
	for _, n := range a.Suggestions {
		if n >= 1 && n <= len(req.Suggestions) { // the router checked them
			out = append(out, req.Suggestions[n-1])
		}
	}
	if a.Mode != "" {
		out = append(out, PermissionUpdate{Type: UpdateSetMode, Mode: a.Mode, Destination: "session"})
	}
	return out
}

// Input is the tool input an allow carries: the given replacement, else
// the original, with AskUserQuestion answers merged in (a string for a
// single-select question, a list for a multi-select one).
func (a PermissionAnswer) Input(req PermissionRequest) (json.RawMessage, error) {
	base := a.UpdatedInput
	if len(base) == 0 {
		base = req.Input
	}
	if len(a.Answers) == 0 {
		return base, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(base, &obj); err != nil || obj == nil {
		return nil, errors.New("the tool input is not a JSON object")
	}
	multi := map[string]bool{}
	for _, q := range req.Questions {
		multi[q.Question] = q.MultiSelect
	}
	answers := map[string]any{}
	for q, labels := range a.Answers {
		if multi[q] {
			answers[q] = labels
		} else if len(labels) == 1 {
			answers[q] = labels[0]
		} else {
			return nil, fmt.Errorf("question %q takes one answer, got %d", q, len(labels))
		}
	}
	b, err := json.Marshal(answers)
	if err != nil {
		return nil, err
	}
	obj["answers"] = b
	return json.Marshal(obj)
}

// CheckCarried refuses an answer that req's source cannot carry: a
// channel (SourceChannel) replies a bare allow or deny, so updated input,
// answers, rules, suggestions, a mode switch or a deny message would be
// lost on the way; saying so beats an allow that is not what was asked.
func CheckCarried(req PermissionRequest, a PermissionAnswer) error {
	if req.Source != SourceChannel {
		return nil
	}
	var lost string
	switch {
	case len(a.UpdatedInput) > 0 || len(a.Answers) > 0:
		lost = "updated input or answers"
	case len(a.Rules) > 0 || len(a.Suggestions) > 0:
		lost = "rules or suggestions (always allow)"
	case a.Mode != "":
		lost = "a mode switch"
	case a.Message != "":
		lost = "a deny message"
	default:
		return nil
	}
	return &InvalidAnswerError{ID: req.ID, Problem: AnswerNotCarried,
		Detail: fmt.Sprintf("%s came through a channel, which carries only allow or deny: not %s", req.ID, lost)}
}
