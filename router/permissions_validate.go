package router

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/sessiongateway/gateway/message"
)

// ValidateAnswer checks a against req as AnswerPermission does, without
// asking anyone.
func ValidateAnswer(req message.PermissionRequest, a message.PermissionAnswer) error {
	bad := func(p message.AnswerProblem, valid []string, format string, args ...any) error {
		return &message.InvalidAnswerError{ID: req.ID, Problem: p, Detail: fmt.Sprintf(format, args...), Valid: valid}
	}
	switch a.Behavior {
	case message.BehaviorAllow:
	case message.BehaviorDeny:
		if len(a.UpdatedInput) > 0 || len(a.Answers) > 0 {
			return bad(message.AnswerDenyWithInput, nil, "a deny takes no updated input or answers, only a message")
		}
		if len(a.Suggestions) > 0 || a.Mode != "" {
			return bad(message.AnswerDenyWithUpdates, nil, "a deny takes no suggestions or mode switch, only a message (and rules)")
		}
	default:
		return bad(message.AnswerBadBehavior, []string{"allow", "deny"}, "behavior %q: want allow or deny", a.Behavior)
	}
	if len(a.UpdatedInput) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(a.UpdatedInput, &obj); err != nil || obj == nil {
			return bad(message.AnswerInputNotObject, nil, "updated input must be a JSON object")
		}
	}
	for _, rule := range a.Rules {
		if rule.ToolName == "" || strings.ContainsAny(rule.ToolName, "()") || strings.ContainsFunc(rule.ToolName, unicode.IsSpace) {
			return bad(message.AnswerBadRule, nil, "rule tool name %q: want a tool name such as Bash", rule.ToolName)
		}
	}
	if a.RuleDestination != "" && !slices.Contains(message.RuleDestinations, a.RuleDestination) {
		return bad(message.AnswerBadDestination, message.RuleDestinations, "rule destination %q is not a settings scope", a.RuleDestination)
	}
	for i, n := range a.Suggestions {
		if n < 1 || n > len(req.Suggestions) {
			return bad(message.AnswerBadSuggestion, suggestionList(req), "suggestion %d: %s", n, offered(req))
		}
		if slices.Contains(a.Suggestions[:i], n) {
			return bad(message.AnswerBadSuggestion, suggestionList(req), "suggestion %d is given twice", n)
		}
	}
	if a.Mode != "" && !message.ValidPermissionMode(a.Mode) {
		return bad(message.AnswerBadMode, message.PermissionModes, "mode %q is not a permission mode", a.Mode)
	}
	if err := message.CheckCarried(req, a); err != nil {
		return err
	}
	if len(a.Answers) > 0 {
		return validateAnswers(req, a.Answers, bad)
	}
	if a.Behavior == message.BehaviorAllow && message.KindOf(req.ToolName) == message.PromptQuestion && !hasAnswers(a.UpdatedInput) {
		return bad(message.AnswerQuestionNeedsAnswers, nil,
			"%s is a question: allow would send no answers; answer it (gateway answer %s \"QUESTION=OPTION\"...) or deny it", req.ID, req.ID)
	}
	return nil
}

// hasAnswers says whether an updated input carries AskUserQuestion answers
// of its own.
func hasAnswers(in json.RawMessage) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal(in, &obj) == nil && len(obj["answers"]) > 0 && string(obj["answers"]) != "null"
}

// suggestionList numbers req's suggestions as answers pick them.
func suggestionList(req message.PermissionRequest) []string {
	out := make([]string, len(req.Suggestions))
	for i, u := range req.Suggestions {
		out[i] = fmt.Sprintf("%d: %s", i+1, u)
	}
	return out
}

func offered(req message.PermissionRequest) string {
	if len(req.Suggestions) == 0 {
		return "the session offers no suggestions with this prompt"
	}
	return fmt.Sprintf("the session offers %d, numbered from 1", len(req.Suggestions))
}

func validateAnswers(req message.PermissionRequest, answers map[string][]string,
	bad func(message.AnswerProblem, []string, string, ...any) error) error {
	if req.ToolName != message.ToolAskUserQuestion {
		return bad(message.AnswerNotAQuestion, nil, "answers are for %s prompts; this one is %s", message.ToolAskUserQuestion, req.ToolName)
	}
	texts := make([]string, len(req.Questions))
	for i, q := range req.Questions {
		texts[i] = q.Question
	}
	for _, k := range slices.Sorted(maps.Keys(answers)) {
		if !slices.Contains(texts, k) {
			return bad(message.AnswerUnknownQuestion, texts, "no question %q", k)
		}
	}
	for _, q := range req.Questions {
		labels, ok := answers[q.Question]
		switch {
		case !ok:
			return bad(message.AnswerMissingQuestion, texts, "question %q has no answer; answer every question", q.Question)
		case !q.MultiSelect && len(labels) != 1:
			return bad(message.AnswerOneOption, q.Options, "question %q takes exactly one option, got %d", q.Question, len(labels))
		case len(labels) == 0:
			return bad(message.AnswerNoOption, q.Options, "question %q needs at least one option", q.Question)
		}
		for i, l := range labels {
			if !slices.Contains(q.Options, l) {
				return bad(message.AnswerUnknownOption, q.Options, "question %q has no option %q", q.Question, l)
			}
			if slices.Contains(labels[:i], l) {
				return bad(message.AnswerRepeatedOption, q.Options, "question %q: option %q is given twice", q.Question, l)
			}
		}
	}
	return nil
}
