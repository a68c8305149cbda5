package message

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestParseSuggestionsKeepsTheKnownUpdatesInOrder(t *testing.T) {
	raw := `[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm test"}],"behavior":"allow","destination":"localSettings"},
		{"type":"becomeRoot"}, 7, {"type":"setMode"},
		{"type":"addDirectories","directories":["/tmp/build"],"destination":"session"},
		{"type":"setMode","mode":"acceptEdits","destination":"session"}]`
	got := ParseSuggestions(json.RawMessage(raw))
	want := []string{"addRules allow Bash(npm test) in localSettings", "addDirectories /tmp/build in session", "setMode acceptEdits in session"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i, u := range got {
		if u.String() != want[i] {
			t.Errorf("suggestion %d = %q, want %q", i+1, u, want[i])
		}
	}
	if ParseSuggestions(json.RawMessage(`{"type":"setMode"}`)) != nil || ParseSuggestions(nil) != nil {
		t.Error("not a list, yet suggestions")
	}
}

func TestParseSuggestionsKeepsAtMostMaxSuggestions(t *testing.T) {
	items := make([]string, MaxSuggestions+5)
	for i := range items {
		items[i] = fmt.Sprintf(`{"type":"addDirectories","directories":["/d%d"]}`, i)
	}
	if got := ParseSuggestions(json.RawMessage("[" + strings.Join(items, ",") + "]")); len(got) != MaxSuggestions {
		t.Fatalf("kept %d", len(got))
	}
}

func TestEachPromptKindHasItsVerbs(t *testing.T) {
	for tool, want := range map[string]string{
		"AskUserQuestion": "question [answer deny]", "ExitPlanMode": "plan_approval [allow deny]",
		"Bash": "tool_use [allow deny]", "": "other [allow deny]",
	} {
		p := PermissionRequest{ToolName: tool}
		p.Classify()
		if got := fmt.Sprint(p.Kind, " ", p.Verbs); got != want {
			t.Errorf("%q: %s, want %s", tool, got, want)
		}
	}
}

// FuzzParseSuggestions: whatever a session sends as permission_suggestions,
// what is kept is bounded and of the shapes an answer may send back.
func FuzzParseSuggestions(f *testing.F) {
	for _, s := range []string{
		`[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls"}],"behavior":"allow","destination":"localSettings"}]`,
		`[{"type":"setMode","mode":"acceptEdits","destination":"session"},{"type":"removeDirectories","directories":["/x"]}]`,
		`[null,1,"x",{"type":"replaceRules","rules":[]}]`, `{}`, `[`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := ParseSuggestions(b)
		if len(got) > MaxSuggestions {
			t.Fatalf("kept %d", len(got))
		}
		for _, u := range got {
			if !u.Valid() || strings.Contains(u.String(), "\n") {
				t.Fatalf("kept %+v", u)
			}
		}
	})
}

func TestAQuestionWithoutOptionsHasAnEmptyListInJSON(t *testing.T) {
	for _, q := range []Question{{Question: "Pick from nothing?"}, {Question: "Pick?", Options: []string{}}} {
		b, err := json.Marshal(PermissionRequest{Questions: []Question{q}})
		if err != nil || !strings.Contains(string(b), `"options":[]`) {
			t.Fatalf("%s (%v), want \"options\":[]", b, err)
		}
	}
	b, _ := json.Marshal(Question{Question: "Which?", Header: "H", MultiSelect: true, Options: []string{"A", "B"}})
	if want := `{"question":"Which?","header":"H","multi_select":true,"options":["A","B"]}`; string(b) != want {
		t.Fatalf("%s, want %s", b, want)
	}
}
