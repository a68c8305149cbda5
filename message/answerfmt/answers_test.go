package answerfmt

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/message"
)

// testQuestions are the questions of an AskUserQuestion prompt, with a
// label that holds spaces and parentheses.
var testQuestions = []message.Question{
	{Question: "Which approach?", Header: "Approach", Options: []string{"Option A (Recommended)", "Option B"}},
	{Question: "Which features?", Header: "Features", MultiSelect: true, Options: []string{"Logging", "Metrics", "Tracing"}},
}

func TestParseAnswers(t *testing.T) {
	withEquals := append(testQuestions[:2:2], message.Question{Question: "Is a=b?", Options: []string{"Yes", "No"}})
	tests := []struct {
		name    string
		qs      []message.Question
		specs   []string
		want    map[string][]string
		wantErr []string // fragments the error must hold
	}{
		{"questions by header and options by label", testQuestions, []string{"Approach=Option B", "Features=Logging"},
			map[string][]string{"Which approach?": {"Option B"}, "Which features?": {"Logging"}}, nil},
		{"questions by text and number, options by number", testQuestions, []string{"Which approach?=1", "2=3"},
			map[string][]string{"Which approach?": {"Option A (Recommended)"}, "Which features?": {"Tracing"}}, nil},
		{"a label matches ignoring case", testQuestions, []string{"approach=option b", "features=METRICS"},
			map[string][]string{"Which approach?": {"Option B"}, "Which features?": {"Metrics"}}, nil},
		{"a multi-select question takes a repeated question", testQuestions, []string{"Approach=Option B", "Features=Logging", "Features=Metrics"},
			map[string][]string{"Which approach?": {"Option B"}, "Which features?": {"Logging", "Metrics"}}, nil},
		{"a multi-select question takes a JSON list", testQuestions, []string{"Approach=Option B", `Features=["Logging","Metrics"]`},
			map[string][]string{"Which approach?": {"Option B"}, "Which features?": {"Logging", "Metrics"}}, nil},
		{"an option chosen twice counts once", testQuestions, []string{"Approach=2", "Features=Logging", "Features=1"},
			map[string][]string{"Which approach?": {"Option B"}, "Which features?": {"Logging"}}, nil},
		{"a question text holding = is found", withEquals, []string{"Approach=2", "Features=1", "Is a=b?=Yes"},
			map[string][]string{"Which approach?": {"Option B"}, "Which features?": {"Logging"}, "Is a=b?": {"Yes"}}, nil},
		{"an unanswered question is refused and listed", testQuestions, []string{"Approach=Option B"},
			nil, []string{"unanswered", `2 "Which features?" (Features, several)`, `1 "Logging"`}},
		{"an unknown question lists the questions", testQuestions, []string{"Colour=Red", "Approach=1", "Features=1"},
			nil, []string{`no question "Colour"`, `1 "Which approach?" (Approach)`}},
		{"an unknown option lists the options", testQuestions, []string{"Approach=Option C", "Features=1"},
			nil, []string{`no option "Option C"`, `1 "Option A (Recommended)", 2 "Option B"`}},
		{"an option number out of range is refused", testQuestions, []string{"Approach=3", "Features=1"},
			nil, []string{`no option "3"`}},
		{"two options for a single-select question are refused", testQuestions, []string{"Approach=1", "Approach=2", "Features=1"},
			nil, []string{"takes one option"}},
		{"a spec without = is refused", testQuestions, []string{"Approach"},
			nil, []string{"want Question=Option"}},
		{"a broken JSON list is refused", testQuestions, []string{"Approach=1", `Features=["Logging"`},
			nil, []string{"JSON list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAnswers(tt.qs, tt.specs)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("got %v, want an error", got)
				}
				for _, frag := range tt.wantErr {
					if !strings.Contains(err.Error(), frag) {
						t.Errorf("error %q does not hold %q", err, frag)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzParseAnswers: whatever specs parseAnswers accepts answer every
// question with options it offers, one for a single-select question.
func FuzzParseAnswers(f *testing.F) {
	f.Add("Approach=Option B\x00Features=Logging")
	f.Add("1=1\x002=[\"Logging\",\"Metrics\"]")
	f.Add("approach=option b\x00Which features?=3\x00features=1")
	f.Add("Approach=1\x00Approach=2")
	f.Add("==Approach = =1\x00 2 ==x\x00Is a=b?=Yes")
	f.Fuzz(func(t *testing.T, joined string) {
		got, err := ParseAnswers(testQuestions, strings.Split(joined, "\x00"))
		if err != nil {
			return
		}
		if len(got) != len(testQuestions) {
			t.Fatalf("%q: answers %v, want one per question", joined, got)
		}
		for _, q := range testQuestions {
			labels := got[q.Question]
			if len(labels) == 0 || (!q.MultiSelect && len(labels) != 1) {
				t.Fatalf("%q: %q answered with %v", joined, q.Question, labels)
			}
			for i, l := range labels {
				if !slices.Contains(q.Options, l) || slices.Contains(labels[:i], l) {
					t.Fatalf("%q: %q answered with %v", joined, q.Question, labels)
				}
			}
		}
	})
}

// TestASpecOfManyEqualsSignsCostsLinearWork pins that each "=" a spec
// tries costs no allocation: an error built for every failed try made a
// 64 KiB spec of "=" take seconds and a 4 MiB one, which MCP and the
// approver's replies accept, hours.
func TestASpecOfManyEqualsSignsCostsLinearWork(t *testing.T) {
	allocs := func(spec string) float64 {
		return testing.AllocsPerRun(3, func() {
			if _, err := ParseAnswers(testQuestions, []string{spec}); err == nil {
				t.Fatal("a spec naming no question was accepted")
			}
		})
	}
	for _, unit := range []string{"=", "Which approach =", " =", "approach? ="} {
		few, many := allocs(strings.Repeat(unit, 256)), allocs(strings.Repeat(unit, 4096))
		// An allocation per try would add 3840; the race detector adds a few.
		if many > few+100 {
			t.Errorf("%q: %.0f allocations with 256 of it, %.0f with 4096, want about as many", unit, few, many)
		}
	}
	_, err := ParseAnswers(testQuestions, []string{strings.Repeat("=", 4<<20)})
	if err == nil || len(err.Error()) > 1000 {
		t.Fatalf("a 4 MiB spec: error of %d bytes, want a short one", len(fmt.Sprint(err)))
	}
}
