package approver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sessiongateway/gateway/message"
)

// ParseAnswers turns "Question=Option" specs into AskUserQuestion answers
// by question text. A question is named by its text, its header or its
// 1-based number; an option by its label (exact, then ignoring case) or
// 1-based number. A multi-select question takes several options by
// repetition or as a JSON list. Every question must be answered. The CLI's
// `gateway answer` and the approver's `answer` reply both read specs here,
// so they accept the same things.
func ParseAnswers(qs []message.Question, specs []string) (map[string][]string, error) {
	answers := map[string][]string{}
	for _, spec := range specs {
		qi, value, err := splitSpec(qs, spec)
		if err != nil {
			return nil, err
		}
		q := qs[qi]
		values := []string{value}
		if strings.HasPrefix(strings.TrimSpace(value), "[") {
			var list []string
			if err := json.Unmarshal([]byte(value), &list); err != nil {
				return nil, fmt.Errorf("%q: the options list is not a JSON list of strings: %v", spec, err)
			}
			values = list
		}
		for _, v := range values {
			label, err := pickOption(q, v)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(answers[q.Question], label) {
				answers[q.Question] = append(answers[q.Question], label)
			}
		}
		if !q.MultiSelect && len(answers[q.Question]) > 1 {
			return nil, fmt.Errorf("question %d %q takes one option, got %s", qi+1, q.Question, quotedList(answers[q.Question]))
		}
	}
	var missing []string
	for i, q := range qs {
		if len(answers[q.Question]) == 0 {
			missing = append(missing, q.Describe(i))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("answer every question; still unanswered:\n  %s", strings.Join(missing, "\n  "))
	}
	return answers, nil
}

// splitSpec finds the "=" that ends a question's name: question texts may
// hold "=" themselves, so each one is tried from the left.
func splitSpec(qs []message.Question, spec string) (int, string, error) {
	if !strings.Contains(spec, "=") {
		return 0, "", fmt.Errorf("%q: want Question=Option; questions:\n  %s", spec, listQuestions(qs))
	}
	var firstErr error
	for i := 0; i < len(spec); i++ {
		if spec[i] != '=' {
			continue
		}
		qi, err := pickQuestion(qs, strings.TrimSpace(spec[:i]))
		if err == nil {
			return qi, spec[i+1:], nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return 0, "", firstErr
}

// pickQuestion matches by text, then header, then number, then text or
// header ignoring case; a name two questions share is ambiguous.
func pickQuestion(qs []message.Question, name string) (int, error) {
	levels := []func(message.Question, int) bool{
		func(q message.Question, _ int) bool { return q.Question == name },
		func(q message.Question, _ int) bool { return q.Header != "" && q.Header == name },
		func(_ message.Question, i int) bool { return strconv.Itoa(i+1) == name },
		func(q message.Question, _ int) bool {
			return strings.EqualFold(q.Question, name) || (q.Header != "" && strings.EqualFold(q.Header, name))
		},
	}
	for _, match := range levels {
		var found []int
		for i, q := range qs {
			if match(q, i) {
				found = append(found, i)
			}
		}
		switch len(found) {
		case 1:
			return found[0], nil
		case 0:
			continue
		}
		return 0, fmt.Errorf("%q names %d questions; use its number:\n  %s", name, len(found), listQuestions(qs))
	}
	return 0, fmt.Errorf("no question %q; questions:\n  %s", name, listQuestions(qs))
}

// pickOption matches a label exactly, then ignoring case, then by number.
func pickOption(q message.Question, v string) (string, error) {
	v = strings.TrimSpace(v)
	if slices.Contains(q.Options, v) {
		return v, nil
	}
	var folded []string
	for _, o := range q.Options {
		if strings.EqualFold(o, v) {
			folded = append(folded, o)
		}
	}
	if len(folded) == 1 {
		return folded[0], nil
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= len(q.Options) {
		return q.Options[n-1], nil
	}
	return "", fmt.Errorf("question %q has no option %q; options: %s", q.Question, v, q.ListOptions())
}

func listQuestions(qs []message.Question) string {
	lines := make([]string, len(qs))
	for i, q := range qs {
		lines[i] = q.Describe(i)
	}
	return strings.Join(lines, "\n  ")
}

func quotedList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}
