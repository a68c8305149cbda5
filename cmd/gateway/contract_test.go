package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// The command line's conventions as people who run daemons expect them:
// help everywhere, completion, --version, short usage errors that suggest,
// one error shape under --json.

// everyCommand is each command and subcommand people can call.
func everyCommand() []*cobra.Command {
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() && s.Name() != "help" && s.Parent().Name() != "completion" {
				out = append(out, s)
				walk(s)
			}
		}
	}
	walk((&app{e: &env{getenv: func(string) string { return "" }}}).root())
	return out
}

func TestEveryCommandsHelpNamesItsArgumentsAndAnExample(t *testing.T) {
	for _, c := range everyCommand() {
		path := strings.Fields(strings.TrimPrefix(c.CommandPath(), "gateway "))
		t.Run(strings.Join(path, " "), func(t *testing.T) {
			for _, how := range [][]string{append(path, "-h"), append(path, "--help"), append([]string{"help"}, path...)} {
				out, errOut, code := runCLI(t, t.TempDir(), how...)
				if code != exitOK {
					t.Fatalf("%v: exit %d, stderr %q", how, code, errOut)
				}
				if !strings.Contains(out, "Usage:\n  "+c.UseLine()) {
					t.Errorf("%v: no usage line %q in\n%s", how, c.UseLine(), out)
				}
				if c.Example == "" || !strings.Contains(out, "Examples:") {
					t.Errorf("%v: no example in\n%s", how, out)
				}
			}
		})
	}
}

func TestHelpNamesPositionalArguments(t *testing.T) {
	for _, tt := range []struct{ args, want []string }{
		{[]string{"send", "-h"}, []string{"gateway send ADDRESS TEXT"}},
		{[]string{"help", "release"}, []string{"gateway release ID"}},
		{[]string{"remote", "mode", "-h"}, []string{"gateway remote mode ID MODE"}},
		{[]string{"tokens", "-h"}, []string{"add", "list", "remove"}},
		{[]string{"controllers", "-h"}, []string{"add", "list", "remove"}},
		{[]string{"answer", "--help"}, []string{"gateway answer ID QUESTION=OPTION..."}},
	} {
		out, _, code := runCLI(t, t.TempDir(), tt.args...)
		for _, w := range tt.want {
			if code != exitOK || !strings.Contains(out, w) {
				t.Errorf("%v: exit %d, help lacks %q:\n%s", tt.args, code, w, out)
			}
		}
	}
}

func TestServeHelpHasNoStrayPlaceholdersAndListsEveryLeg(t *testing.T) {
	out, _, code := runCLI(t, t.TempDir(), "serve", "-h")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(out, "--api gateway") || strings.Contains(out, "`") {
		t.Errorf("a placeholder taken from backticks:\n%s", out)
	}
	for _, leg := range []string{"claude", "qwen", "remote", "none"} {
		if !strings.Contains(lineOf(out, "--legs"), leg) {
			t.Errorf("--legs help does not name %s: %q", leg, lineOf(out, "--legs"))
		}
	}
	if rel, _, _ := runCLI(t, t.TempDir(), "release", "-h"); strings.Contains(rel, "--reason") {
		t.Errorf("release -h offers --reason, which only deny takes:\n%s", rel)
	}
}

func lineOf(text, word string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), word+" ") {
			return l
		}
	}
	return ""
}

// send's help showed a file attached to a Qwen Code session from the
// current directory: the qwen leg carries no files, and a file must be in
// the files directory (default <state-dir>/files).
func TestAnExampleAttachesAFileAsASendCanTakeIt(t *testing.T) {
	filesDir := filepath.Join("~", ".local", "state", "gateway", "files") + "/"
	for _, c := range everyCommand() {
		for _, line := range strings.Split(c.Example, "\n") {
			words := strings.Fields(line)
			for i, w := range words {
				if w != "--file" || i+1 == len(words) {
					continue
				}
				if !strings.HasPrefix(words[i+1], filesDir) || strings.Contains(line, "qwen") {
					t.Errorf("%s: %q attaches a file a send refuses: take it from %s, to a Claude Code or remote session", c.CommandPath(), strings.TrimSpace(line), filesDir)
				}
			}
		}
	}
}

func TestVersionFlagMatchesTheVersionCommand(t *testing.T) {
	cmd, _, _ := runCLI(t, t.TempDir(), "version")
	flag, _, code := runCLI(t, t.TempDir(), "--version")
	if code != exitOK || flag != cmd || cmd != "gateway "+version+"\n" {
		t.Fatalf("--version %q (exit %d), version %q", flag, code, cmd)
	}
}

func TestCompletionScriptsLoad(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		out, errOut, code := runCLI(t, t.TempDir(), "completion", sh)
		if code != exitOK || !strings.Contains(out, "gateway") {
			t.Fatalf("completion %s: exit %d, %q", sh, code, errOut)
		}
		if sh != "bash" {
			continue
		}
		bash, err := exec.LookPath("bash")
		testutil.Need(t, err == nil, "no bash to load the completion script: %v", err)
		file := filepath.Join(t.TempDir(), "gateway.bash")
		if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := exec.Command(bash, "-c", "source "+file+" && complete -p gateway").CombinedOutput()
		if err != nil || !strings.Contains(string(got), "gateway") {
			t.Fatalf("the bash script does not load: %v %s", err, got)
		}
	}
	// What the scripts ask the binary: the commands, then a command's flags.
	out, _, _ := runCLI(t, t.TempDir(), "__complete", "se")
	if !strings.Contains(out, "send") || !strings.Contains(out, "sessions") || !strings.Contains(out, "serve") {
		t.Errorf("completing se: %q", out)
	}
	if out, _, _ = runCLI(t, t.TempDir(), "__complete", "serve", "--le"); !strings.Contains(out, "--legs") {
		t.Errorf("completing serve --le: %q", out)
	}
}

func TestUsageErrorsAreShortAndSuggest(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"a misspelt command", []string{"sesions"}, "did you mean sessions?"},
		{"a misspelt subcommand", []string{"tokens", "lst"}, "did you mean list?"},
		{"a misspelt remote subcommand", []string{"remote", "sesions"}, "did you mean sessions?"},
		{"a misspelt flag", []string{"send", "a", "b", "--wiat"}, "did you mean --wait?"},
		{"a misspelt serve flag", []string{"serve", "--legz", "claude"}, "did you mean --legs?"},
		{"a missing argument", []string{"send", "work-08"}, "ADDRESS TEXT"},
		{"an argument too many says how many came", []string{"outbox", "x"}, "gateway: outbox takes no arguments; 1 was given\n"},
		{"a serve flag unknown in the other commands' words", []string{"serve", "--bogus"}, "gateway: unknown flag: --bogus\n"},
		{"a serve flag without its value in the same words", []string{"serve", "--legs"}, "gateway: flag needs an argument: --legs\n"},
		{"a group without its command", []string{"controllers"}, "add, list, remove"},
		{"help on a misspelt command", []string{"help", "sesions"}, "did you mean sessions?"},
		{"help on an unknown subcommand", []string{"help", "remote", "nosuch"}, `no help topic "nosuch" for gateway remote`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, t.TempDir(), tt.args...)
			if code != exitUsage || out != "" || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errOut, tt.want)
			}
			if n := strings.Count(errOut, "\n"); n > 4 {
				t.Fatalf("%d lines for a usage error:\n%s", n, errOut)
			}
			if strings.Count(errOut, "did you mean") > 1 || strings.Contains(errOut, "gateway: gateway") {
				t.Fatalf("said twice:\n%s", errOut)
			}
		})
	}
}

func TestSingleDashLongFlagsStillWork(t *testing.T) {
	sd := t.TempDir()
	out, errOut, code := runCLI(t, t.TempDir(), "tokens", "add", "-label", "old-style", "-state-dir", sd, "-json", "-scope", "read,send")
	var tok struct {
		Label  string
		Scopes []string // a list, as tokens list gives them
	}
	if code != exitOK || json.Unmarshal([]byte(out), &tok) != nil || tok.Label != "old-style" || strings.Join(tok.Scopes, " ") != "read send" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out, _, _ := runCLI(t, t.TempDir(), "tokens", "list", "--state-dir="+sd); !strings.Contains(out, "old-style") {
		t.Fatalf("the token went elsewhere: %q", out)
	}
}

// errorBody is the one error shape under --json.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func TestUnderJSONEveryFailureIsOneErrorObjectOnStdout(t *testing.T) {
	nowhere := filepath.Join(t.TempDir(), "none")
	for _, tt := range []struct {
		name     string
		args     []string
		exit     int
		wantCode string
	}{
		{"no gateway running", []string{"sessions", "--json"}, exitError, "unreachable"},
		{"no gateway running, for release", []string{"release", "abc", "--json"}, exitError, "unreachable"},
		{"a usage error", []string{"send", "--json", "only-an-address"}, exitUsage, "usage"},
		{"an unknown flag", []string{"held", "--json", "--nope"}, exitUsage, "usage"},
		{"a bad scope", []string{"tokens", "add", "--label", "x", "--scope", "root", "--json"}, exitUsage, "usage"},
		{"an unknown token", []string{"tokens", "remove", "t_nope", "--json"}, exitError, "not_found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, nowhere, tt.args...)
			var b errorBody
			if code != tt.exit || json.Unmarshal([]byte(out), &b) != nil || b.Code != tt.wantCode || b.Error == "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d and {error, code: %s}", code, out, errOut, tt.exit, tt.wantCode)
			}
		})
	}
}

// TestJSONWhereItIsNotTakenSaysWhereItIs: the unknown-flag error for
// --json keeps its words and names the commands that take it.
func TestJSONWhereItIsNotTakenSaysWhereItIs(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"serve, whose flags the standard library parses", []string{"serve", "--json"}},
		{"a command of the other parser", []string{"mcp", "--json"}},
		{"a subcommand, after its arguments", []string{"completion", "bash", "--json=true"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, t.TempDir(), tt.args...)
			var b errorBody
			if code != exitUsage || json.Unmarshal([]byte(out), &b) != nil || b.Code != "usage" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2 and a usage error", code, out, errOut)
			}
			head, list, ok := strings.Cut(b.Error, "; --json is taken by: ")
			if head != "unknown flag: --json" || !ok {
				t.Fatalf("error %q: want the unknown-flag words, then who takes --json", b.Error)
			}
			takers := strings.Split(list, ", ")
			for _, want := range []string{"gateway send", "gateway config", "gateway tokens ...", "gateway remote ..."} {
				if !slices.Contains(takers, want) {
					t.Errorf("%q not among %q", want, takers)
				}
			}
			for _, not := range []string{"gateway serve", "gateway mcp", "gateway completion bash", "gateway alias-worker", "gateway remote sessions"} {
				if slices.Contains(takers, not) {
					t.Errorf("%q is listed, but does not take --json", not)
				}
			}
		})
	}
	if _, errOut, _ := runCLI(t, t.TempDir(), "serve", "--jsn"); strings.Contains(errOut, "taken by") {
		t.Errorf("another unknown flag got the --json list: %q", errOut)
	}
}

func TestEmptyStatesSayWhatToDoNextKeepingTheStateDir(t *testing.T) {
	g := startBinary(t, t.TempDir())
	// Without GATEWAY_STATE_DIR, as a person types it: --state-dir is not
	// the default, so every hint carries it.
	cmd := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(context.Background(), &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }},
			append(args, "--state-dir", g.StateDir))
		return out.String(), errb.String(), code
	}
	keep := "--state-dir " + g.StateDir
	for _, tt := range []struct {
		args       []string
		exit       int
		want, hint string
	}{
		{[]string{"sessions"}, exitOK, "no sessions yet", "demo-cloud " + keep},
		{[]string{"held"}, exitOK, "no held messages", ""},
		{[]string{"permissions"}, exitOK, "no pending permission prompts", "watch " + keep},
		{[]string{"tokens", "list"}, exitOK, "no tokens", "tokens add --label LABEL --scope read,send " + keep},
		{[]string{"remote", "sessions"}, exitError, "runs no remote leg", "demo-cloud " + keep},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, code := cmd(tt.args...)
			if code != tt.exit || !strings.Contains(out+errOut, tt.want) || !strings.Contains(out+errOut, tt.hint) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, %q and %q", code, out, errOut, tt.exit, tt.want, tt.hint)
			}
		})
	}
}

func TestHeldMessagesTakeShortIDsAndDecisionsConfirm(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	events := collect(t, g)
	hold := func(text string) string {
		id, err := fk.Send(ctxT(t), gatewayAddress(t, g), text, message.ModeBypass)
		if err != nil {
			t.Fatal(err)
		}
		waitEvent(t, events, func(ev message.Event) bool {
			return ev.Type == message.EventHeld && ev.Held != nil && ev.Held.Message.ID == id
		})
		return id
	}
	first, second := hold("hold me"), hold("hold me too")
	out, _, code := runCLI(t, g.StateDir, "held")
	if code != exitOK || !strings.Contains(out, first[:8]+" from") || !strings.Contains(out, "release ID") {
		t.Fatalf("held: exit %d\n%s", code, out)
	}
	out, errOut, code := runCLI(t, g.StateDir, "release", first[:8])
	if code != exitOK || !strings.Contains(out, "released "+first[:8]) {
		t.Fatalf("release by short id: exit %d, %q %q", code, out, errOut)
	}
	out, errOut, code = runCLI(t, g.StateDir, "deny", strings.ToUpper(second[:6]), "--reason", "not now", "--json")
	var d struct{ ID, Action string }
	if code != exitOK || json.Unmarshal([]byte(out), &d) != nil || d.ID != second || d.Action != "deny" {
		t.Fatalf("deny by short id: exit %d, %q %q", code, out, errOut)
	}
	out, _, code = runCLI(t, g.StateDir, "held")
	if code != exitOK || !strings.Contains(out, "no held messages") {
		t.Fatalf("held after both: exit %d %q", code, out)
	}
	_, errOut, code = runCLI(t, g.StateDir, "release", first[:8])
	if code != exitError || !strings.Contains(errOut, "no held message has id") {
		t.Fatalf("release twice: exit %d %q", code, errOut)
	}
}

func TestStatusShowsLegsSessionsAndWhatWaits(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	events := collect(t, g)
	id, err := fk.Send(ctxT(t), gatewayAddress(t, g), "hold me", message.ModeBypass)
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, func(ev message.Event) bool {
		return ev.Type == message.EventHeld && ev.Held != nil && ev.Held.Message.ID == id
	})
	out, errOut, code := runCLI(t, g.StateDir, "status", "--json")
	var st struct {
		Version       string `json:"version"`
		UptimeSeconds *int64 `json:"uptime_seconds"`
		Legs          []struct {
			Name, State       string
			Sessions, Aliases int
		} `json:"legs"`
		Held        int  `json:"held"`
		Pending     *int `json:"pending_prompts"`
		OutboxDepth *int `json:"outbox_depth"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	legs := map[string]int{}
	for _, l := range st.Legs {
		if l.State != "ready" {
			t.Errorf("leg %s: %s", l.Name, l.State)
		}
		legs[l.Name] = l.Sessions
	}
	if st.Version != version || st.UptimeSeconds == nil || st.Held != 1 || st.Pending == nil || *st.Pending != 0 ||
		st.OutboxDepth != nil || legs["claude"] != 1 || legs["qwen"] != 0 {
		t.Fatalf("status = %s", out)
	}
	out, _, code = runCLI(t, g.StateDir, "status")
	for _, w := range []string{"gateway " + version + ", up ", "LEG", "claude", "ready", "held messages:    1  (see gateway held)", "pending prompts:  0\n"} {
		if code != exitOK || !strings.Contains(out, w) {
			t.Errorf("status lacks %q:\n%s", w, out)
		}
	}
}

func TestStatusShowsRemoteLinksAndPendingPrompts(t *testing.T) {
	g := startPromptGateway(t)
	g.raise(t, pendingPrompt("bash", "Bash", `{"command":"go test ./..."}`),
		message.Event{Type: message.EventLink, Leg: message.ProtocolRemote, Link: &message.Link{SessionID: remoteSID, State: message.LinkReconnecting, Attempt: 2}})
	out, errOut, code := g.cli(t, "status", "--json")
	var st struct {
		Links []message.Link `json:"links"`
		Legs  []struct {
			Name     string
			Sessions int
		} `json:"legs"`
		Pending int `json:"pending_prompts"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &st) != nil || st.Pending != 1 || len(st.Links) != 1 ||
		st.Links[0].SessionID != remoteSID || st.Links[0].State != message.LinkReconnecting {
		t.Fatalf("exit %d, stdout %s, stderr %q", code, out, errOut)
	}
	out, _, _ = g.cli(t, "status")
	for _, w := range []string{"remote links:     " + remoteSID + " reconnecting (attempt 2)", "pending prompts:  1  (see gateway permissions --state-dir " + g.stateDir + ")"} {
		if !strings.Contains(out, w) {
			t.Errorf("status lacks %q:\n%s", w, out)
		}
	}
}

func TestAGroupsHelpWordShowsItsHelp(t *testing.T) {
	out, _, code := runCLI(t, t.TempDir(), "remote", "help")
	if code != exitOK || !strings.Contains(out, "gateway remote [command]") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// FuzzLongFlags: the single-dash rewrite keeps every argument, in order,
// changes only a known flag's dashes and nothing after "--".
func FuzzLongFlags(f *testing.F) {
	for _, s := range []string{"-state-dir x sessions", "send a -json -- -json", "-1 -h -v", "--x=-y", "- -- -"} {
		f.Add(s)
	}
	root := (&app{e: &env{getenv: func(string) string { return "" }}}).root()
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, " ")
		got := longFlags(root, args)
		if len(got) != len(args) {
			t.Fatalf("%q became %q", args, got)
		}
		after := false
		for i := range args {
			if got[i] != args[i] && (after || got[i] != "-"+args[i]) {
				t.Fatalf("%q became %q", args, got)
			}
			after = after || args[i] == "--"
		}
	})
}

func TestEveryCommandTakesJSON(t *testing.T) {
	// serve runs, mcp speaks MCP on stdout, completion prints a script:
	// none has a document to give. config has its own --json.
	// hook's stdout is Claude Code's hook output.
	without := map[string]bool{"gateway serve": true, "gateway mcp": true, "gateway completion": true, "gateway hook": true}
	for _, c := range everyCommand() {
		if without[c.CommandPath()] || c.HasSubCommands() {
			continue
		}
		if c.Flags().Lookup("json") == nil && c.InheritedFlags().Lookup("json") == nil {
			t.Errorf("%s has no --json", c.CommandPath())
		}
	}
}

func TestExitCodesOfTheCommandLineItselfAreAsBefore(t *testing.T) {
	for _, tt := range []struct {
		args []string
		exit int
	}{
		{nil, exitUsage}, // usage on stdout, as before
		{[]string{"help"}, exitOK},
		{[]string{"-h"}, exitOK},
		{[]string{"--help"}, exitOK},
		{[]string{"--version"}, exitOK},
		{[]string{"nosuch"}, exitUsage},
		{[]string{"tokens"}, exitUsage},
		{[]string{"remote"}, exitUsage},
		{[]string{"completion"}, exitUsage},         // a group without its shell
		{[]string{"completion", "tcsh"}, exitUsage}, // a shell it has no script for
		{[]string{"completion", "bash"}, exitOK},
		{[]string{"serve", "-h"}, exitOK},
		{[]string{"serve", "--legs", "nosuch"}, exitUsage},
	} {
		out, errOut, code := runCLI(t, t.TempDir(), tt.args...)
		if code != tt.exit {
			t.Errorf("gateway %v: exit %d, want %d (stdout %q, stderr %q)", tt.args, code, tt.exit, out, errOut)
		}
		if tt.args == nil && !strings.Contains(out, "Sessions and messages:") {
			t.Errorf("gateway alone printed %q", out)
		}
	}
}
