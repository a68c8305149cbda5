package hosted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
)

type rig struct {
	l      *Leg
	events chan message.Event
	stop   func()
	state  string // the state dir
	cwd    string
}

// startRig runs a leg whose claude and qwen are the stand-in, with its
// state in state ("" for a fresh one).
func startRig(t *testing.T, state string, tune func(*Config)) *rig {
	t.Helper()
	if state == "" {
		state = t.TempDir()
		if err := os.Chmod(state, 0o700); err != nil { // a state dir is private
			t.Fatal(err)
		}
	}
	cfg := Config{StateDir: state, ClaudePath: fakeCLI(t, "claude"), QwenPath: fakeCLI(t, "qwen")}
	if tune != nil {
		tune(&cfg)
	}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{l: l, events: make(chan message.Event, 1024), state: state, cwd: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, r.events) }()
	stopped := false
	r.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(20 * time.Second):
			t.Error("the leg did not stop")
		}
	}
	t.Cleanup(r.stop)
	waitFor(t, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.runCtx != nil })
	return r
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// next is the next event that matches.
func (r *rig) next(t *testing.T, match func(message.Event) bool) message.Event {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case ev := <-r.events:
			if match(ev) {
				return ev
			}
		case <-timeout:
			t.Fatal("no such event")
		}
	}
}

// said waits for the session's assistant text.
func (r *rig) said(t *testing.T, text string) message.Event {
	t.Helper()
	return r.next(t, func(ev message.Event) bool {
		return ev.Type == message.EventRemote && ev.Remote.Kind == "assistant" && ev.Remote.Text == text
	})
}

func (r *rig) start(t *testing.T, spec message.StartSpec) message.Session {
	t.Helper()
	if spec.Cwd == "" {
		spec.Cwd = r.cwd
	}
	s, err := r.l.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (r *rig) send(t *testing.T, to message.Session, text string) message.Receipt {
	t.Helper()
	rc, err := r.l.Send(context.Background(), message.Message{ID: "m-" + text, To: to.Address, Body: text})
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func TestAHostedSessionIsListedTakesTurnsAndAnswersThem(t *testing.T) {
	for _, agent := range message.Agents {
		t.Run(agent, func(t *testing.T) {
			r := startRig(t, "", nil)
			s := r.start(t, message.StartSpec{Agent: agent, Name: "builder", Prompt: "hello"})
			if s.Address != "hosted:builder" || s.Protocol != message.ProtocolHosted || s.Kind != agent || s.Cwd != r.cwd || s.PID == 0 {
				t.Fatalf("listed as %+v", s)
			}
			r.said(t, "echo: hello")
			if rc := r.send(t, s, "again"); rc.Status != message.StatusSent {
				t.Fatalf("a follow-up turn: %+v", rc)
			}
			delivered := r.next(t, func(ev message.Event) bool { return ev.Type == message.EventReceipt })
			if delivered.Receipt.MsgID != "m-again" || delivered.Receipt.Status != message.StatusDelivered {
				t.Fatalf("receipt %+v", delivered.Receipt)
			}
			ev := r.said(t, "echo: again")
			if ev.Leg != message.ProtocolHosted || ev.Remote.Address != "hosted:builder" {
				t.Fatalf("event %+v", ev)
			}
			ss, _ := r.l.Sessions(context.Background())
			if len(ss) != 1 || ss[0].Status != "idle" && ss[0].Status != "working" {
				t.Fatalf("sessions %+v", ss)
			}
		})
	}
}

func TestAHostedSessionsToolPromptIsAnsweredThroughTheLeg(t *testing.T) {
	cases := []struct {
		name   string
		answer message.PermissionAnswer
		said   string
	}{
		{"allow", message.PermissionAnswer{Behavior: message.BehaviorAllow}, "the tool was allow"},
		{"always allow", message.PermissionAnswer{Behavior: message.BehaviorAllow, Suggestions: []int{1}}, "the tool was allow always"},
		{"deny with a message", message.PermissionAnswer{Behavior: message.BehaviorDeny, Message: "not now"}, "the tool was deny not now"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := startRig(t, "", nil)
			s := r.start(t, message.StartSpec{Agent: message.AgentClaude, Name: "tools", Prompt: "tool"})
			ev := r.next(t, func(ev message.Event) bool { return ev.Type == message.EventPermission })
			p := *ev.Permission
			if p.Source != message.SourceHosted || p.Name != "tools" || p.ToolName != "Bash" || p.State != message.PermissionPending ||
				p.SessionID == "" || len(p.Suggestions) != 1 || p.Address != s.Address {
				t.Fatalf("prompt %+v", p)
			}
			if err := r.l.Answer(context.Background(), p, c.answer); err != nil {
				t.Fatal(err)
			}
			r.said(t, c.said)
			var se *message.PromptSettledError
			if err := r.l.Answer(context.Background(), p, c.answer); !errors.As(err, &se) {
				t.Fatalf("a second answer: %v, want it refused as settled", err)
			}
		})
	}
}

func TestControlRequestsReachTheCLIAndItsRefusalIsTyped(t *testing.T) {
	r := startRig(t, "", nil)
	s := r.start(t, message.StartSpec{Agent: message.AgentClaude, Name: "ctl"})
	for _, c := range []message.Control{{Kind: message.ControlInterrupt}, {Kind: message.ControlSetPermissionMode, Mode: "plan"}, {Kind: message.ControlSetModel, Model: "opus"}} {
		if res, err := r.l.Control(context.Background(), s, c); err != nil || !res.Acknowledged {
			t.Fatalf("%s: %+v, %v", c.Kind, res, err)
		}
	}
	var refused *message.ControlRefusedError
	if _, err := r.l.Control(context.Background(), s, message.Control{Kind: message.ControlSetModel, Model: "no-such-model"}); !errors.As(err, &refused) || refused.Reason != "unknown model" {
		t.Fatalf("a refused set_model: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(r.state, "hosted.json"))
	if !strings.Contains(string(b), `"permission_mode":"plan"`) || !strings.Contains(string(b), `"model":"opus"`) {
		t.Fatalf("the accepted mode and model are not kept: %s", b)
	}
}

func TestARestartResumesEverySessionAndLosesNoAcceptedTurn(t *testing.T) {
	r := startRig(t, "", nil)
	s := r.start(t, message.StartSpec{Agent: message.AgentClaude, Name: "keeper", Prompt: "one"})
	r.said(t, "echo: one")
	r.stop()
	// While the gateway is down a turn is accepted and kept.
	l, err := New(Config{StateDir: r.state, ClaudePath: fakeCLI(t, "claude")})
	if err != nil {
		t.Fatal(err)
	}
	if rc, err := l.Send(context.Background(), message.Message{ID: "m-two", To: s.Address, Body: "two"}); err != nil || rc.Status != message.StatusQueued {
		t.Fatalf("a turn while stopped: %+v, %v", rc, err)
	}
	r3 := startRig(t, r.state, nil)
	init := r3.next(t, func(ev message.Event) bool { return ev.Type == message.EventRemote && ev.Remote.Kind == "system" })
	if !strings.Contains(string(init.Remote.Raw), `"--resume"`) || !strings.Contains(string(init.Remote.Raw), s.SessionID) {
		t.Fatalf("not resumed: %s", init.Remote.Raw)
	}
	r3.said(t, "echo: two")
	if rc := r3.send(t, s, "history"); rc.Status != message.StatusSent {
		t.Fatalf("%+v", rc)
	}
	r3.said(t, "I remember 2 turns")
}

func TestACLIThatDiesIsReportedAndStartsAgainForItsNextTurn(t *testing.T) {
	r := startRig(t, "", nil)
	s := r.start(t, message.StartSpec{Agent: message.AgentClaude, Name: "fragile", Prompt: "tool"})
	r.next(t, func(ev message.Event) bool {
		return ev.Type == message.EventPermission && ev.Permission.State == message.PermissionPending
	})
	r.l.mu.Lock()
	p := r.l.sessions["fragile"].p
	r.l.mu.Unlock()
	p.kill()
	gone := r.next(t, func(ev message.Event) bool { return ev.Type == message.EventPermission })
	if gone.Permission.State != message.PermissionCancelled {
		t.Fatalf("the dead CLI's prompt: %+v", gone.Permission)
	}
	waitFor(t, func() bool { ss, _ := r.l.Sessions(context.Background()); return ss[0].Status == "exited" })
	r.send(t, s, "junk")
	r.said(t, "echo: junk")
	if rc := r.send(t, s, "die"); rc.Status != message.StatusSent {
		t.Fatalf("%+v", rc)
	}
	waitFor(t, func() bool { ss, _ := r.l.Sessions(context.Background()); return ss[0].Status == "exited" })
	if st := r.l.Stats(); st.Junk != 10 {
		t.Fatalf("junk lines counted %d, want 10", st.Junk)
	}
}

func TestStartRefusesWhatItMustNotRun(t *testing.T) {
	r := startRig(t, "", func(c *Config) { c.MaxHosted = 1 })
	other := t.TempDir()
	if os.Geteuid() == 0 {
		if err := os.Chown(other, 12345, 12345); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]struct {
		spec message.StartSpec
		want error
	}{
		"an unknown agent":        {message.StartSpec{Agent: "gpt", Cwd: r.cwd}, message.ErrBadStart},
		"a missing cwd":           {message.StartSpec{Agent: "claude", Cwd: filepath.Join(r.cwd, "nope")}, message.ErrBadStart},
		"an unknown mode":         {message.StartSpec{Agent: "claude", Cwd: r.cwd, PermissionMode: "yolo"}, message.ErrBadStart},
		"a name with a slash":     {message.StartSpec{Agent: "claude", Cwd: r.cwd, Name: "a/b"}, message.ErrBadStart},
		"a prompt over the limit": {message.StartSpec{Agent: "claude", Cwd: r.cwd, Prompt: strings.Repeat("x", MaxTurnText+1)}, message.ErrBadStart},
	}
	if os.Geteuid() == 0 {
		cases["another user's cwd"] = struct {
			spec message.StartSpec
			want error
		}{message.StartSpec{Agent: "claude", Cwd: other}, message.ErrBadStart}
	}
	for name, c := range cases {
		if _, err := r.l.Start(context.Background(), c.spec); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	r.start(t, message.StartSpec{Agent: "claude", Name: "only"})
	if _, err := r.l.Start(context.Background(), message.StartSpec{Agent: "claude", Cwd: r.cwd}); !errors.Is(err, message.ErrTooManyHosted) {
		t.Fatalf("past --max-hosted: %v", err)
	}
	missing, err := New(Config{ClaudePath: filepath.Join(r.cwd, "no-claude")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := missing.Start(context.Background(), message.StartSpec{Agent: "claude", Cwd: r.cwd}); !errors.Is(err, message.ErrAgentMissing) || !strings.Contains(err.Error(), "npm install -g @anthropic-ai/claude-code") {
		t.Fatalf("a missing CLI: %v", err)
	}
}

func TestTurnsPastTheQueueAreRefused(t *testing.T) {
	r := startRig(t, "", func(c *Config) { c.MaxQueued = 2 })
	s := r.start(t, message.StartSpec{Agent: "claude", Name: "busy", Prompt: "tool"}) // waits on its prompt: turns queue
	r.next(t, func(ev message.Event) bool { return ev.Type == message.EventPermission })
	r.send(t, s, "a")
	r.send(t, s, "b")
	if rc := r.send(t, s, "c"); rc.Status != message.StatusFailed || !strings.Contains(rc.Reason, "queue full") {
		t.Fatalf("the third turn: %+v", rc)
	}
	if r.l.Stats().Refused != 1 {
		t.Fatalf("refusals %+v", r.l.Stats())
	}
}

func TestTheCLIGetsAMinimalEnvironment(t *testing.T) {
	env := childEnv([]string{"PATH=/bin", "HOME=/h", "GATEWAY_TOKEN=secret", "CLAUDE_CODE_MESSAGING_TOKEN=peer-secret",
		"ANTHROPIC_API_KEY=k", "AWS_SECRET_ACCESS_KEY=x", "CLAUDE_CONFIG_DIR=/c", "OTEL_EXPORTER_OTLP_HEADERS=auth"})
	got := strings.Join(env, " ")
	for _, want := range []string{"PATH=/bin", "HOME=/h", "ANTHROPIC_API_KEY=k", "CLAUDE_CONFIG_DIR=/c", "TERM=dumb"} {
		if !strings.Contains(got, want) {
			t.Errorf("%s not passed", want)
		}
	}
	for _, never := range []string{"GATEWAY_TOKEN", "CLAUDE_CODE_MESSAGING_TOKEN", "AWS_SECRET", "OTEL_"} {
		if strings.Contains(got, never) {
			t.Errorf("%s passed to the CLI", never)
		}
	}
}

func TestTheCLIStartsWithNothingOfTheGatewaysEnvironment(t *testing.T) {
	r := startRig(t, "", func(c *Config) {
		c.Environ = func() []string {
			return append(os.Environ(), "GATEWAY_TOKEN=gwt_secret", "CLAUDE_CODE_MESSAGING_TOKEN=peer-secret", "ANTHROPIC_BASE_URL=http://127.0.0.1:9")
		}
	})
	r.start(t, message.StartSpec{Agent: message.AgentClaude, Name: "env"})
	init := r.next(t, func(ev message.Event) bool { return ev.Type == message.EventRemote && ev.Remote.Kind == "system" })
	raw := string(init.Remote.Raw)
	if strings.Contains(raw, "gwt_secret") || strings.Contains(raw, "peer-secret") || !strings.Contains(raw, "ANTHROPIC_BASE_URL=http://127.0.0.1:9") {
		t.Fatalf("the CLI's environment: %s", raw)
	}
}

func TestATurnFromASessionIsAnsweredBackToIt(t *testing.T) {
	r := startRig(t, "", nil)
	s := r.start(t, message.StartSpec{Agent: message.AgentClaude, Name: "helper"})
	from := "uds:/tmp/cc-socks/4242.sock"
	if _, err := r.l.Send(context.Background(), message.Message{ID: "m-ask", To: s.Address, Body: "what now?", From: from,
		FromName: "work-08", FromSession: "s-work", Mode: message.ModePrompting}); err != nil {
		t.Fatal(err)
	}
	ev := r.next(t, func(ev message.Event) bool { return ev.Type == message.EventMessage })
	m := ev.Message
	if m.To != from || m.AliasOf != from || m.ToSessionID != "s-work" || m.From != s.Address || m.FromName != "helper" ||
		!strings.HasPrefix(m.Body, "echo: Message from work-08") || !strings.HasSuffix(m.Body, "what now?") {
		t.Fatalf("the answer went out as %+v", m)
	}
	// A turn from the CLI or the API has no one to answer.
	r.send(t, s, "quiet")
	r.said(t, "echo: quiet")
	r.next(t, func(ev message.Event) bool {
		if ev.Type == message.EventMessage {
			t.Fatalf("a turn with no sender was answered: %+v", ev.Message)
		}
		return ev.Type == message.EventRemote && ev.Remote.Kind == "result"
	})
	for {
		select {
		case ev := <-r.events:
			if ev.Type == message.EventMessage {
				t.Fatalf("a turn with no sender was answered: %+v", ev.Message)
			}
		case <-time.After(300 * time.Millisecond):
			return
		}
	}
}

func TestCommandIsTheCommandLineTheLegRuns(t *testing.T) {
	for _, agent := range message.Agents {
		t.Run(agent, func(t *testing.T) {
			r := startRig(t, "", nil)
			s := r.start(t, message.StartSpec{Agent: agent, Name: "builder", Prompt: "hello", PermissionMode: "plan", Model: "m1"})
			init := r.next(t, func(ev message.Event) bool { return ev.Type == message.EventRemote && ev.Remote.Kind == "system" })
			var ran struct{ Args []string }
			if err := json.Unmarshal(init.Remote.Raw, &ran); err != nil {
				t.Fatal(err)
			}
			args, env, err := Command(agent, "plan", "m1", s.SessionID, []string{"PATH=/bin", "GATEWAY_TOKEN=secret"})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(args, ran.Args) {
				t.Errorf("Command gives %q, the leg ran %q", args, ran.Args)
			}
			if !slices.Contains(env, "PATH=/bin") || slices.Contains(env, "GATEWAY_TOKEN=secret") {
				t.Errorf("Command's environment is not the leg's: %q", env)
			}
		})
	}
	if _, _, err := Command("vim", "", "", "", nil); !errors.Is(err, message.ErrBadStart) {
		t.Errorf("an unknown agent: %v, want ErrBadStart", err)
	}
}

func TestWatchersHearASessionStartEndAndStop(t *testing.T) {
	r := startRig(t, "", nil)
	s := r.start(t, message.StartSpec{Agent: message.AgentClaude, Name: "noted"})
	state := func(want string) {
		t.Helper()
		r.next(t, func(ev message.Event) bool {
			return ev.Type == message.EventSession && ev.Session.Address == s.Address && ev.Session.Status == want
		})
	}
	state("starting")
	r.send(t, s, "die")
	state("exited")
	if err := r.l.Stop(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	state("stopped")
}

func TestAQuestionOfAHostedSessionIsAPromptWithItsQuestions(t *testing.T) {
	r := startRig(t, "", nil)
	r.start(t, message.StartSpec{Agent: message.AgentClaude, Name: "asker", Prompt: "ask"})
	ev := r.next(t, func(ev message.Event) bool { return ev.Type == message.EventPermission })
	p := *ev.Permission
	if len(p.Questions) != 1 || p.Questions[0].Question != "Which approach?" || !slices.Equal(p.Questions[0].Options, []string{"Small", "Big"}) {
		t.Fatalf("prompt %+v", p)
	}
	if err := r.l.Answer(context.Background(), p, message.PermissionAnswer{Behavior: message.BehaviorAllow,
		Answers: map[string][]string{"Which approach?": {"Small"}}}); err != nil {
		t.Fatal(err)
	}
	r.said(t, "the question was allow")
}

func TestACLIThatStopsReadingIsStoppedAndItsTurnsKept(t *testing.T) {
	defer func(d time.Duration) { writeTimeout = d }(writeTimeout)
	writeTimeout = 200 * time.Millisecond
	r := startRig(t, "", nil)
	s := r.start(t, message.StartSpec{Agent: message.AgentClaude, Name: "stuck", Prompt: "hang"})
	r.next(t, func(ev message.Event) bool { return ev.Type == message.EventRemote && ev.Remote.Kind == "user" })
	big := strings.Repeat("x", 512<<10) // a few of these fill the pipe the CLI no longer reads
	for i := range 4 {
		start := time.Now()
		rc, err := r.l.Send(context.Background(), message.Message{ID: fmt.Sprintf("m-%d", i), To: s.Address, Body: big})
		if err != nil || rc.Status != message.StatusSent && rc.Status != message.StatusQueued {
			t.Fatalf("send %d: %+v, %v", i, rc, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("a send to a CLI that reads nothing took %v: it waited on the CLI", d)
		}
	}
	r.next(t, func(ev message.Event) bool { return ev.Type == message.EventSession && ev.Session.Status == "exited" })
	b, _ := os.ReadFile(filepath.Join(r.state, "hosted.json"))
	for i := range 4 {
		if !strings.Contains(string(b), fmt.Sprintf(`"msg_id":"m-%d"`, i)) {
			t.Fatalf("turn m-%d, which the CLI did not read, is not kept", i)
		}
	}
}
