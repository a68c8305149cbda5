package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// remoteSID is the prompt leg's one session.
const remoteSID = legtest.SessionID

// decisionText spells d as the table below expects it.
func decisionText(d legtest.Decision) string {
	return fmt.Sprintf("%s release=%v reason=%s", d.ID, d.Release, d.Reason)
}

// promptGateway is an API server and router in-process, on a control socket
// in a fresh state directory, over a prompt leg and a Claude-like leg with
// one session and held messages.
type promptGateway struct {
	stateDir string
	leg      *legtest.PromptLeg
	claude   *legtest.Fake
	rt       *router.Router
}

func startPromptGateway(t *testing.T) *promptGateway {
	t.Helper()
	leg := legtest.NewPromptLeg()
	leg.Status = "running"
	g := &promptGateway{stateDir: filepath.Join(testutil.ShortTempDir(t), "state"), leg: leg, claude: legtest.New(message.ProtocolClaude,
		message.Session{Address: "uds:/tmp/cc-socks/12.sock", Protocol: message.ProtocolClaude, Name: "review", SessionID: "s-review", Reachable: true})}
	if err := os.Mkdir(g.stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	g.rt = router.New(router.Config{}, g.claude.With(legtest.Holds), g.leg)
	ln, err := net.Listen("unix", filepath.Join(g.stateDir, "gateway.sock"))
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: api.NewServer(api.Config{Router: g.rt}).Handler()}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := g.rt.Run(ctx); err != nil {
			t.Errorf("router: %v", err)
		}
	})
	wg.Go(func() { _ = hs.Serve(ln) })
	t.Cleanup(func() {
		hs.Close()
		cancel()
		wg.Wait()
	})
	<-g.leg.Started()
	return g
}

// raise sends evs from the remote leg and waits until the router has
// handled them: it handles one leg event at a time, so a marker after them
// published means they are done.
func (g *promptGateway) raise(t *testing.T, evs ...message.Event) {
	t.Helper()
	_, _, sub := g.rt.Hub().Subscribe(-1)
	defer sub.Close()
	g.leg.Raise(append(evs, message.Event{Type: message.EventSession})...)
	for ev := range sub.C {
		if ev.Type == message.EventSession {
			return
		}
	}
	t.Fatalf("subscription ended: %v", sub.Err())
}

func (g *promptGateway) cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }},
		append(args, "--state-dir", g.stateDir))
	return out.String(), errb.String(), code
}

func pendingPrompt(request, tool, input string) message.Event {
	return message.Event{Type: message.EventPermission, Leg: message.ProtocolRemote, Permission: &message.PermissionRequest{
		SessionID: remoteSID, Address: "bridge:" + remoteSID, RequestID: request, ToolName: tool, ToolUseID: "toolu_" + request,
		Input: json.RawMessage(input), State: message.PermissionPending,
	}}
}

var testQuestions = []message.Question{
	{Question: "Which approach?", Header: "Approach", Options: []string{"Option A (Recommended)", "Option B"}},
	{Question: "Which features?", Header: "Features", MultiSelect: true, Options: []string{"Logging", "Metrics", "Tracing"}},
}

func questionPrompt(request string) message.Event {
	ev := pendingPrompt(request, "AskUserQuestion", `{"questions":[]}`)
	ev.Permission.Questions = testQuestions
	return ev
}

// idOf is the short id the router gave a prompt.
func (g *promptGateway) idOf(t *testing.T, request string) string {
	t.Helper()
	for _, p := range append(g.rt.Permissions(), g.rt.SettledPermissions()...) {
		if p.RequestID == request {
			return p.ID
		}
	}
	t.Fatalf("no prompt %s", request)
	return ""
}

func TestPermissionCommands(t *testing.T) {
	g := startPromptGateway(t)
	g.raise(t, pendingPrompt("bash", "Bash", `{"command":"go test ./..."}`), questionPrompt("ask"),
		pendingPrompt("edit", "Edit", `{"file_path":"/src/a.go"}`), pendingPrompt("plan", "ExitPlanMode", `{"plan":"do it"}`))
	bash, ask, edit, plan := g.idOf(t, "bash"), g.idOf(t, "ask"), g.idOf(t, "edit"), g.idOf(t, "plan")

	t.Run("permissions --json lists each prompt with id, session, tool and input", func(t *testing.T) {
		out, _, code := g.cli(t, "permissions", "--json")
		var ps []map[string]any
		if code != exitOK || json.Unmarshal([]byte(out), &ps) != nil || len(ps) != 4 {
			t.Fatalf("exit %d: %s", code, out)
		}
		if ps[0]["id"] != bash || ps[0]["session_id"] != remoteSID || ps[0]["tool_name"] != "Bash" || ps[0]["input"].(map[string]any)["command"] != "go test ./..." {
			t.Fatalf("first = %v", ps[0])
		}
	})
	t.Run("permissions prints a table with a summary per prompt", func(t *testing.T) {
		out, _, code := g.cli(t, "permissions")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != exitOK || len(lines) != 5 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[0], "SUMMARY") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		if !strings.Contains(lines[1], bash) || !strings.Contains(lines[1], "go test ./...") || !strings.Contains(lines[2], "Which approach? / Which features?") {
			t.Fatalf("rows:\n%s", out)
		}
	})
	t.Run("a bad rule is a usage error and nothing is sent", func(t *testing.T) {
		_, errOut, code := g.cli(t, "allow", bash, "--rule", "Bash(ls")
		if code != exitUsage || !strings.Contains(errOut, "must end with )") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		_, errOut, code = g.cli(t, "allow", bash, "--input", "[1]")
		if code != exitUsage || !strings.Contains(errOut, "JSON object") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if a := g.leg.Answers(); len(a) != 0 {
			t.Fatalf("the leg got %+v", a)
		}
	})
	t.Run("allow sends the input and the rules", func(t *testing.T) {
		out, errOut, code := g.cli(t, "allow", bash, "--input", `{"command":"go test -race ./..."}`, "--rule", "Bash(go test ./...)", "--rule", "Read", "--rule-destination", "session")
		if code != exitOK || !strings.Contains(out, "allowed "+bash) {
			t.Fatalf("exit %d: %s %s", code, out, errOut)
		}
		a := g.leg.Answers()
		want := []message.PermissionRule{{ToolName: "Bash", RuleContent: "go test ./..."}, {ToolName: "Read"}}
		if len(a) != 1 || a[0].Behavior != message.BehaviorAllow || string(a[0].UpdatedInput) != `{"command":"go test -race ./..."}` ||
			fmt.Sprint(a[0].Rules) != fmt.Sprint(want) || a[0].RuleDestination != "session" || a[0].By != "socket:cli" {
			t.Fatalf("the leg got %+v", a)
		}
	})
	t.Run("a second answer fails and says who answered", func(t *testing.T) {
		_, errOut, code := g.cli(t, "deny", bash, "--message", "late")
		if code != exitError || !strings.Contains(errOut, "already answered (allow) by socket:cli") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		out, _, code := g.cli(t, "allow", bash, "--json")
		var e api.Error
		if code != exitError || json.Unmarshal([]byte(out), &e) != nil || e.Code != api.CodeConflict {
			t.Fatalf("exit %d: %s", code, out)
		}
	})
	t.Run("deny sends the message to the model", func(t *testing.T) {
		out, _, code := g.cli(t, "deny", edit, "--message", "not that file", "--json")
		var p message.PermissionRequest
		if code != exitOK || json.Unmarshal([]byte(out), &p) != nil || p.State != message.PermissionAnswered || p.Answer.Behavior != message.BehaviorDeny {
			t.Fatalf("exit %d: %s", code, out)
		}
		if a := g.leg.Answers(); a[len(a)-1].Message != "not that file" {
			t.Fatalf("the leg got %+v", a[len(a)-1])
		}
	})
	t.Run("answer refuses an incomplete answer and lists what is missing", func(t *testing.T) {
		_, errOut, code := g.cli(t, "answer", ask, "Approach=Option B")
		if code != exitUsage || !strings.Contains(errOut, "Which features?") || !strings.Contains(errOut, `"Metrics"`) {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
	t.Run("answer refuses a prompt that asks no question", func(t *testing.T) {
		_, errOut, code := g.cli(t, "answer", plan, "1=1")
		if code != exitError || !strings.Contains(errOut, "gateway allow") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
	t.Run("answer sends labels by question text", func(t *testing.T) {
		n := g.leg.Answers()
		out, errOut, code := g.cli(t, "answer", ask, "Approach=1", `Features=["Logging","tracing"]`)
		if code != exitOK || !strings.Contains(out, "answered "+ask) {
			t.Fatalf("exit %d: %s %s", code, out, errOut)
		}
		a := g.leg.Answers()
		if len(a) != len(n)+1 {
			t.Fatalf("the leg got %d answers, want one more", len(a)-len(n))
		}
		got := a[len(a)-1]
		want := map[string][]string{"Which approach?": {"Option A (Recommended)"}, "Which features?": {"Logging", "Tracing"}}
		if got.Behavior != message.BehaviorAllow || fmt.Sprint(got.Answers) != fmt.Sprint(want) {
			t.Fatalf("the leg got %+v", got)
		}
	})
	t.Run("permissions --all shows settled prompts with their state", func(t *testing.T) {
		out, _, code := g.cli(t, "permissions", "--all")
		if code != exitOK || !strings.Contains(out, "STATE") || strings.Count(out, "answered") != 3 || strings.Count(out, "pending") != 1 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
}

func TestDenyFallsBackToHeldMessages(t *testing.T) {
	g := startPromptGateway(t)
	g.claude.Hold(message.Held{Message: message.Message{ID: "8f1c", FromName: "work-08"}, Reason: "bypass sender"})
	tests := []struct {
		name     string
		args     []string
		code     int
		decided  string
		errorHas string
	}{
		{"a held message is denied with --reason", []string{"deny", "8f1c", "--reason", "no thanks"}, exitOK, "8f1c release=false reason=no thanks", ""},
		{"an id that is neither says so", []string{"deny", "nope"}, exitError, "", "no permission prompt or held message has id nope"},
		{"--message and --reason that differ are refused", []string{"deny", "x", "--message", "a", "--reason", "b"}, exitUsage, "", "same flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := g.cli(t, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.errorHas) {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, errOut)
			}
			decided := g.claude.Decided()
			if tt.decided != "" && (len(decided) == 0 || decisionText(decided[len(decided)-1]) != tt.decided) {
				t.Fatalf("decided %v, want %q", decided, tt.decided)
			}
		})
	}
}
