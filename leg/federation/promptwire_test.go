package federation

import (
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
)

// A local session's prompt can carry a whole command more than once: in
// its input, in the "always allow" rule it suggests, in a tool use id its
// hook made up. Published, it is cut down to fit, and the host's other
// prompts are published beside it.
func TestAPromptTooLargeForTheWireIsCutDownNotTheHostsList(t *testing.T) {
	command := "cat > big.sql <<'EOF'\n" + strings.Repeat("INSERT INTO t VALUES (1);\n", 45000) + "EOF" // over 1 MiB
	in, _ := json.Marshal(map[string]string{"command": command})
	rule := func(content string) message.PermissionUpdate {
		return message.PermissionUpdate{Type: message.UpdateAddRules, Behavior: "allow", Destination: "localSettings",
			Rules: []message.PermissionRule{{ToolName: "Bash", RuleContent: content}}}
	}
	big := message.PermissionRequest{ID: "p1", SessionID: "s1", RequestID: "r1", ToolName: "Bash", Source: message.SourceHook,
		ToolUseID: strings.Repeat("u", 1<<20), Input: in, State: message.PermissionPending,
		Suggestions: []message.PermissionUpdate{rule("cat > big.sql *"), rule(command), rule("cat *")}}
	small := message.PermissionRequest{ID: "p2", SessionID: "s2", RequestID: "r2", ToolName: "Bash", Source: message.SourceHook,
		ToolUseID: "toolu_01", Input: json.RawMessage(`{"command":"make test"}`), State: message.PermissionPending,
		Suggestions: []message.PermissionUpdate{rule("make test")}}

	self := testNode(t, "c")
	b, err := self.encode(envelope{Kind: kindPrompts, From: "c", To: "c", Prompts: []message.PermissionRequest{self.forWire(big), self.forWire(small)}})
	if err != nil {
		t.Fatalf("the list does not fit: %v", err)
	}
	a := testNode(t, "a")
	a.keys.check("c", self.signer.key.Public().(ed25519.PublicKey), true) // as from c's roster entry
	got := map[string]message.PermissionRequest{}
	for _, ev := range a.heardPrompts("c", true, b, time.Now()) {
		got[ev.Permission.RequestID] = *ev.Permission
	}
	cut, kept := got["r1"], got["r2"]
	// The suggestions kept are the first ones, so an answer's numbers
	// mean on c what they meant where it was given.
	if cut.Source != message.SourceHook || cut.ToolUseID != "" || len(cut.Suggestions) != 1 || cut.Suggestions[0].Rules[0].RuleContent != "cat > big.sql *" {
		t.Errorf("the large prompt was published as %+v", cut.Suggestions)
	}
	if kept.ToolUseID != "toolu_01" || len(kept.Suggestions) != 1 || string(kept.Input) != `{"command":"make test"}` {
		t.Errorf("the small prompt was published as %+v", kept)
	}
}
