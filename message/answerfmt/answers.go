package answerfmt

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
				return nil, fmt.Errorf("%s: the options list is not a JSON list of strings: %v", quoteCut(spec), err)
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
// hold "=" themselves, so each one is tried from the left. Only the first
// failed try builds its error, so a spec of many "=" costs linear time.
func splitSpec(qs []message.Question, spec string) (int, string, error) {
	if !strings.Contains(spec, "=") {
		return 0, "", fmt.Errorf("%s: want Question=Option; questions:\n  %s", quoteCut(spec), listQuestions(qs))
	}
	var firstErr error
	for i := 0; i < len(spec); i++ {
		if spec[i] != '=' {
			continue
		}
		name := strings.TrimSpace(spec[:i])
		found := matchQuestion(qs, name)
		if len(found) == 1 {
			return found[0], spec[i+1:], nil
		}
		if firstErr == nil {
			firstErr = questionError(qs, name, found)
		}
	}
	return 0, "", firstErr
}

// PickQuestion is the question name names, or why there is none.
func PickQuestion(qs []message.Question, name string) (int, error) {
	found := matchQuestion(qs, name)
	if len(found) != 1 {
		return 0, questionError(qs, name, found)
	}
	return found[0], nil
}

// matchQuestion matches by text, then header, then number, then text or
// header ignoring case, and returns the matches of the first level that
// has any: more than one means name is ambiguous. It allocates nothing
// when nothing matches.
func matchQuestion(qs []message.Question, name string) []int {
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
		if len(found) > 0 {
			return found
		}
	}
	return nil
}

// questionError says why name, which matched found, picks no question.
func questionError(qs []message.Question, name string, found []int) error {
	if len(found) > 1 {
		return fmt.Errorf("%s names %d questions; use its number:\n  %s", quoteCut(name), len(found), listQuestions(qs))
	}
	return fmt.Errorf("no question %s; questions:\n  %s", quoteCut(name), listQuestions(qs))
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
	return "", fmt.Errorf("question %q has no option %s; options: %s", q.Question, quoteCut(v), q.ListOptions())
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

// quoteCut quotes s for an error, cut to its first 200 bytes: a spec may be
// megabytes long, and the error goes back to whoever sent it.
func quoteCut(s string) string {
	const limit = 200
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:limit]) + "…"
}
