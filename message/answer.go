package message

import (
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
