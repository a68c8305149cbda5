package mcp

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
)

func TestAnAnswerCarriesSuggestionsRulesAndModeAsTheCLIsDoes(t *testing.T) {
	pl := legtest.NewPromptLeg()
	w := newWorld(t, pl)
	approver := w.connect(t, "approver", api.AllScopes)
	<-pl.Started()
	ev := legtest.Prompt(legtest.SessionID, "req-1", "Bash", `{"command":"go test ./..."}`)
	offered := message.PermissionUpdate{Type: message.UpdateAddRules, Behavior: "allow", Destination: "localSettings",
		Rules: []message.PermissionRule{{ToolName: "Bash", RuleContent: "go test:*"}}}
	ev.Permission.Suggestions = []message.PermissionUpdate{offered}
	pl.Raise(ev)
	id := legtest.ShortID(legtest.SessionID, "req-1")
	testutil.Eventually(t, "the prompt is pending", func() bool { _, err := w.rt.Permission(id); return err == nil })

	refused := []struct {
		name string
		args map[string]any
		want string
	}{
		{"a suggestion the prompt does not offer", map[string]any{"id": id, "behavior": "allow", "suggestions": []int{2}}, "suggestion"},
		{"a mode the protocol does not know", map[string]any{"id": id, "behavior": "allow", "mode": "yolo"}, "mode"},
		{"suggestions with a deny", map[string]any{"id": id, "behavior": "deny", "suggestions": []int{1}}, "suggestion"},
	}
	for _, tt := range refused {
		if got := call(t, approver, "answer_permission_request", tt.args, nil); !strings.Contains(strings.ToLower(got), tt.want) {
			t.Errorf("%s: error %q, want it to mention %q", tt.name, got, tt.want)
		}
	}
	if n := len(pl.Answers()); n != 0 {
		t.Fatalf("a refused answer reached the leg: %d answers", n)
	}

	mustCall(t, approver, "answer_permission_request", map[string]any{
		"id": id, "behavior": "allow", "suggestions": []int{1}, "rules": []string{"Read"}, "mode": "acceptEdits"}, nil)
	testutil.EventuallyWithin(t, 10*time.Second, "one answer at the leg", func() bool { return len(pl.Answers()) == 1 })
	a := pl.Answers()[0]
	if a.Behavior != message.BehaviorAllow || !slices.Equal(a.Suggestions, []int{1}) || a.Mode != "acceptEdits" ||
		len(a.Rules) != 1 || a.Rules[0].ToolName != "Read" {
		t.Fatalf("the leg got %+v", a)
	}
	if n := len(pl.Controls()); n != 0 {
		t.Fatalf("the mode went out as a separate control too: %+v", pl.Controls())
	}
}
