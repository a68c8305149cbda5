package approver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

const (
	approverAddr    = "uds:/tmp/cc-socks/12.sock"
	approverSession = "s-review"
	strangerAddr    = "uds:/tmp/cc-socks/10.sock"
)

var msgSeq atomic.Int64

// stranger and review (the approver) are the sessions of the local leg.
var (
	stranger = message.Session{Address: strangerAddr, Protocol: message.ProtocolClaude, Name: "work", SessionID: "s-work", PID: 10, Reachable: true}
	review   = message.Session{Address: approverAddr, Protocol: message.ProtocolClaude, Name: "review", SessionID: approverSession, PID: 12, Reachable: true}
)

// localLeg is a Claude-like leg (fake) with the approver ("review") and a
// stranger ("work") on it. It hands every message the gateway sends to
// sent, and can fail the first sends.
type localLeg struct {
	fake *legtest.Fake
	sent chan message.Message

	mu       sync.Mutex
	failures int // sends still to fail
}

func newLocalLeg() *localLeg {
	l := &localLeg{fake: legtest.New(message.ProtocolClaude, stranger, review), sent: make(chan message.Message, 256)}
	l.fake.OnSend = func(_ context.Context, m message.Message) (message.Receipt, error) {
		l.mu.Lock()
		fail := l.failures > 0
		if fail {
			l.failures--
		}
		l.mu.Unlock()
		if fail {
			return message.Receipt{}, errors.New("connection refused")
		}
		l.sent <- m
		return message.Receipt{MsgID: m.ID, Status: message.StatusSent}, nil
	}
	return l
}

// failFirst makes the next n sends fail.
func (l *localLeg) failFirst(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures = n
}

// say delivers a message from a local session to the gateway itself,
// written by the approver's process unless m names another (-1: none).
func (l *localLeg) say(t *testing.T, m message.Message) {
	t.Helper()
	ss, _ := l.fake.Sessions(context.Background())
	switch m.SenderPID {
	case 0:
		m.SenderPID = ss[1].PID
	case -1:
		m.SenderPID = 0
	}
	if m.ID == "" {
		m.ID = fmt.Sprintf("msg-%d", msgSeq.Add(1))
	}
	m.Protocol = message.ProtocolClaude
	l.fake.Emit(t, message.Event{Type: message.EventMessage, Leg: message.ProtocolClaude, Message: &m})
}

// next is the next message the gateway sent. The timeout only stops a
// broken test from hanging.
func (l *localLeg) next(t *testing.T) message.Message {
	t.Helper()
	select {
	case m := <-l.sent:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway sent nothing")
		return message.Message{}
	}
}

// logTap hands every log message to a channel, so a test can wait for a
// decision that leaves no other trace.
type logTap struct{ msgs chan string }

func (h logTap) Enabled(context.Context, slog.Level) bool { return true }
func (h logTap) Handle(_ context.Context, r slog.Record) error {
	select {
	case h.msgs <- r.Message:
	default:
	}
	return nil
}
func (h logTap) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h logTap) WithGroup(string) slog.Handler      { return h }

func (h logTap) waitFor(t *testing.T, msg string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-h.msgs:
			if m == msg {
				return
			}
		case <-deadline:
			t.Fatalf("never logged %q", msg)
		}
	}
}

// noTimer is a timer that already fired.
type noTimer struct{}

func (noTimer) Stop() bool { return false }

type approverRig struct {
	r      *router.Router
	a      *Approver
	remote promptLeg
	local  *localLeg
	log    logTap

	mu     sync.Mutex
	delays []time.Duration // waits the approver asked the clock for
}

// instantClock fires every wait at once and records what was asked.
type instantClock struct{ g *approverRig }

func (instantClock) Now() time.Time { return time.Now() }

func (c instantClock) AfterFunc(d time.Duration, f func()) clock.Stopper {
	c.g.mu.Lock()
	c.g.delays = append(c.g.delays, d)
	c.g.mu.Unlock()
	f()
	return noTimer{}
}

// startApprover runs a router over a remote leg that raises prompts and a
// local leg, with the approver "review" beside it. Waits take no time.
func startApprover(t *testing.T) *approverRig { return startApproverAt(t, "review") }

// startApproverAt is startApprover with the approver at addr.
func startApproverAt(t *testing.T, addr string, aliases ...message.Session) *approverRig {
	t.Helper()
	g := &approverRig{remote: newPromptLeg(), local: newLocalLeg(), log: logTap{msgs: make(chan string, 4096)}}
	g.local.fake.SetAliases(aliases...)
	g.r = router.New(router.Config{Logger: slog.New(g.log), Clock: instantClock{g}}, g.remote, g.local.fake)
	a := New(g.r, Config{Address: addr, Logger: slog.New(g.log), Clock: instantClock{g}})
	g.a = a
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- g.r.Run(ctx) }()
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}
	})
	return g
}

// raise publishes prompts from the remote leg and returns their ids, after
// the approver got the notice of each.
func (g *approverRig) raise(t *testing.T, evs ...message.Event) []string {
	t.Helper()
	pub := g.remote.feed(t, g.r, evs...)
	var ids []string
	for _, ev := range pub {
		ids = append(ids, ev.Permission.ID)
		if m := g.local.next(t); !strings.Contains(m.Body, ev.Permission.ID) {
			t.Fatalf("notice %q is not about %s", m.Body, ev.Permission.ID)
		}
	}
	return ids
}

// ask sends body from the approver and returns the gateway's answer.
func (g *approverRig) ask(t *testing.T, body string) string {
	t.Helper()
	g.local.say(t, message.Message{From: approverAddr, FromName: "review", FromSession: approverSession, Body: body})
	m := g.local.next(t)
	if m.To != approverAddr {
		t.Fatalf("the answer went to %s, want the approver", m.To)
	}
	return m.Body
}

func holdsAll(t *testing.T, text string, frags ...string) {
	t.Helper()
	for _, f := range frags {
		if !strings.Contains(text, f) {
			t.Errorf("%q\ndoes not hold %q", text, f)
		}
	}
}

func TestTheApproverGetsEachPromptWithItsIDAndTheReplyForms(t *testing.T) {
	id := legtest.ShortID(legtest.SessionID, "r1")
	tests := []struct {
		name  string
		event message.Event
		want  []string
	}{
		{"a tool prompt shows the session, the tool, its input and allow and deny",
			func() message.Event {
				ev := legtest.Prompt(legtest.SessionID, "r1", "Bash", `{"command":"go test ./...","description":"run the tests"}`)
				ev.Permission.Description = "Run the\ntests"
				return ev
			}(),
			[]string{"Permission request " + id, `remote session "fix-the-bug" (bridge:session_01abc)`, "the tool Bash wants to run",
				"Description: Run the tests\n", "\"command\": \"go test ./...\"", "  allow " + id + "\n", "  deny " + id + " <reason>\n", "first answer wins"}},
		{"a local session's prompt from its hook says so, with the session's name and its terminal",
			func() message.Event {
				ev := legtest.Prompt(legtest.SessionID, "r1", "Bash", `{"command":"make deploy"}`)
				ev.Permission.Source, ev.Permission.Name, ev.Permission.Address = message.SourceHook, "work-08", "uds:/tmp/cc-socks/4242.sock"
				return ev
			}(),
			[]string{"Permission request " + id, `local session "work-08" (uds:/tmp/cc-socks/4242.sock)`, "at the session's own terminal"}},
		{"a question shows its numbered options and an answer that parses",
			legtest.AskPrompt("r1"),
			[]string{"Question " + id, "1. Which approach? [Approach] (choose one)", "1) Option A", "2) Option B",
				"2. Which features? [Features] (choose one or more)", "  answer " + id + ` "Approach=Option A" "Features=Logging"` + "\n",
				`answer ` + id + ` "1=1" "2=1" works too`, `("Features=Logging" "Features=Metrics")`, `Features=["Logging","Metrics"]`, "  deny " + id + " <reason>"}},
		{"a tool prompt lists the session's suggestions by number and the allow options",
			func() message.Event {
				ev := legtest.Prompt(legtest.SessionID, "r1", "Bash", `{"command":"npm test"}`)
				ev.Permission.Suggestions = []message.PermissionUpdate{{Type: message.UpdateAddRules, Behavior: "allow", Destination: "localSettings",
					Rules: []message.PermissionRule{{ToolName: "Bash", RuleContent: "npm test"}}}}
				return ev
			}(),
			[]string{"The session suggests (add one to an allow with --suggestion N):\n  1) addRules allow Bash(npm test) in localSettings\n",
				"allow " + id + " --suggestion 1", "--mode MODE", "--input JSON"}},
		{"a plan asks for approval and offers a mode switch in the same answer",
			legtest.Prompt(legtest.SessionID, "r1", "ExitPlanMode", `{"plan":"1. fix it"}`),
			[]string{"Plan approval " + id, "leave plan mode and carry out its plan", "allow " + id + " --mode acceptEdits", "  deny " + id + " <reason>\n"}},
		{"a huge input is cut and says where to read it whole",
			legtest.Prompt(legtest.SessionID, "r1", "Write", `{"content":"`+strings.Repeat("x", 5000)+`"}`),
			[]string{"… (cut: 2000 of ", "bytes shown; `gateway permissions --json` shows it whole)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startApprover(t)
			g.remote.feed(t, g.r, tt.event)
			m := g.local.next(t)
			if m.To != approverAddr || m.ToSessionID != approverSession {
				t.Fatalf("sent to %s (%s), want the approver", m.To, m.ToSessionID)
			}
			holdsAll(t, m.Body, tt.want...)
			if len(m.Body) > inputCap+2000 {
				t.Errorf("the notice is %d bytes", len(m.Body))
			}
		})
	}
}

func TestAPromptThatNeedsNoAnswerAnyMoreIsAnnounced(t *testing.T) {
	tests := []struct {
		name  string
		event message.Event
		want  string
	}{
		{"a withdrawn prompt", legtest.Withdraw(legtest.SessionID, "r1"), "was withdrawn by the session: nothing to answer."},
		{"a prompt answered on claude.ai", message.Event{Type: message.EventPermission, Permission: &message.PermissionRequest{
			SessionID: legtest.SessionID, RequestID: "r1", State: message.PermissionAnswered, Answer: &message.PermissionAnswer{Behavior: message.BehaviorDeny}}},
			"was answered (deny) by another client of the session (claude.ai): nothing left to answer."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startApprover(t)
			id := g.raise(t, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{"command":"ls"}`))[0]
			g.remote.feed(t, g.r, tt.event)
			holdsAll(t, g.local.next(t).Body, "Permission request "+id+" (Bash: ls) "+tt.want)
		})
	}
}

func TestTheApproversReplyAnswersThePrompt(t *testing.T) {
	bash := func() message.Event { return legtest.Prompt(legtest.SessionID, "r1", "Bash", `{"command":"ls"}`) }
	id := legtest.ShortID(legtest.SessionID, "r1")
	both := map[string][]string{"Which approach?": {"Option B"}, "Which features?": {"Logging", "Metrics"}}
	tests := []struct {
		name    string
		prompt  message.Event
		reply   string
		want    message.PermissionAnswer
		confirm string
	}{
		{"allow allows", bash(), "allow " + id,
			message.PermissionAnswer{Behavior: message.BehaviorAllow}, "Allowed " + id + " (Bash: ls)."},
		{"a shouted allow in quotes with a slash and a full stop allows", bash(), "\n  \"/ALLOW " + strings.ToUpper(id) + ".\"  \nthanks",
			message.PermissionAnswer{Behavior: message.BehaviorAllow}, "Allowed " + id},
		{"an allow in a code block allows", bash(), "```\nallow <" + id + ">\n```",
			message.PermissionAnswer{Behavior: message.BehaviorAllow}, "Allowed " + id},
		{"deny with a reason denies and passes the reason on", bash(), "deny " + id + " not on the main branch",
			message.PermissionAnswer{Behavior: message.BehaviorDeny, Message: "not on the main branch"}, "Denied " + id + " (Bash: ls). The session's model is told: not on the main branch"},
		{"deny with a quoted reason drops the quotes", bash(), "Deny: " + id + ` "too risky"`,
			message.PermissionAnswer{Behavior: message.BehaviorDeny, Message: "too risky"}, "Denied " + id},
		{"deny without a reason denies", bash(), "deny " + id,
			message.PermissionAnswer{Behavior: message.BehaviorDeny}, "Denied " + id + " (Bash: ls)."},
		{"answer by header and label, repeating a multi-select question", legtest.AskPrompt("r1"),
			"answer " + id + ` "Approach=Option B" "Features=Logging" "Features=Metrics"`,
			message.PermissionAnswer{Behavior: message.BehaviorAllow, Answers: both}, "Answered " + id + ": Which approach? = Option B; Which features? = Logging, Metrics."},
		{"answer by numbers with a JSON list", legtest.AskPrompt("r1"),
			"answer " + id + ` 1=2 Features=["Logging","Metrics"]`,
			message.PermissionAnswer{Behavior: message.BehaviorAllow, Answers: both}, "Answered " + id},
		{"answer by question text in single quotes", legtest.AskPrompt("r1"),
			"answer " + id + ` 'Which approach?=option b' '2=[ "Logging", "Metrics" ]'`,
			message.PermissionAnswer{Behavior: message.BehaviorAllow, Answers: both}, "Answered " + id},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startApprover(t)
			g.raise(t, tt.prompt)
			holdsAll(t, g.ask(t, tt.reply), tt.confirm)
			tt.want.By = approverAddr
			if got := g.remote.answered(); len(got) != 1 || !reflect.DeepEqual(got[0], tt.want) {
				t.Fatalf("the leg got %+v, want %+v", got, tt.want)
			}
			if p, _ := g.r.Permission(id); p.State != message.PermissionAnswered {
				t.Fatalf("state %s, want answered", p.State)
			}
		})
	}
}

func TestTheExampleAnswerInANoticeAnswersThePrompt(t *testing.T) {
	g := startApprover(t)
	g.remote.feed(t, g.r, legtest.AskPrompt("r1"))
	var example string
	for line := range strings.Lines(g.local.next(t).Body) {
		if strings.HasPrefix(line, "  answer ") {
			example = line
		}
	}
	holdsAll(t, g.ask(t, example), "Answered ")
	want := map[string][]string{"Which approach?": {"Option A"}, "Which features?": {"Logging"}}
	if got := g.remote.answered(); len(got) != 1 || !reflect.DeepEqual(got[0].Answers, want) {
		t.Fatalf("the leg got %+v, want %v", got, want)
	}
}

func TestARepliesThatCannotBeAppliedSayWhatIsExpected(t *testing.T) {
	id := legtest.ShortID(legtest.SessionID, "r1")
	forms := []string{"allow <id>", "deny <id> <reason>", `answer <id> "Question=Option"`, "Pending:\n  " + id}
	tests := []struct {
		name   string
		prompt message.Event
		reply  string
		want   []string
	}{
		{"a verb without an id", legtest.AskPrompt("r1"), "allow", append([]string{`could not read your reply "allow": allow needs the request's id`}, forms...)},
		{"an allow with words after the id", legtest.AskPrompt("r1"), "allow " + id + " please", append([]string{`allow takes the id and options (--suggestion N, --mode MODE, --rule RULE, --input JSON), but "please" follows it`}, forms...)},
		{"an id that is no id", legtest.AskPrompt("r1"), "deny p#1", append([]string{`"p#1" is not a request id`}, forms...)},
		{"an answer without specs", legtest.AskPrompt("r1"), "answer " + id, append([]string{`answer needs "Question=Option" after the id`}, forms...)},
		{"an unclosed quote", legtest.AskPrompt("r1"), "answer " + id + ` "Approach=Option B`, append([]string{`a "quote" is not closed`}, forms...)},
		{"an unknown id", legtest.AskPrompt("r1"), "allow pffffff", append([]string{"there is no permission request pffffff"}, forms...)},
		{"an option the question does not offer", legtest.AskPrompt("r1"), "answer " + id + ` "Approach=Option C" Features=1`,
			[]string{`Not applied: question "Which approach?" has no option "Option C"; options: 1 "Option A", 2 "Option B"`, "  answer " + id + ` "Approach=Option A"`}},
		{"a question left unanswered", legtest.AskPrompt("r1"), "answer " + id + " Approach=1",
			[]string{"Not applied: answer every question; still unanswered:", `2 "Which features?" (Features, several): 1 "Logging", 2 "Metrics"`}},
		{"an answer to a prompt that asks nothing", legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`), "answer " + id + " 1=1",
			[]string{"Not applied: " + id + " is a Bash request, not a question.", "  allow " + id, "  deny " + id + " <reason>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startApprover(t)
			g.raise(t, tt.prompt)
			holdsAll(t, g.ask(t, tt.reply), tt.want...)
			if n := len(g.remote.answered()); n != 0 {
				t.Fatalf("the leg got %d answers", n)
			}
			if p, _ := g.r.Permission(id); p.State != message.PermissionPending {
				t.Fatalf("state %s, want still pending", p.State)
			}
		})
	}
}

func TestMessagesThatAreNoRepliesAreLeftAlone(t *testing.T) {
	tests := []struct {
		name    string
		from    message.Message
		waitLog string // the decision to wait for; "" when it is made before publishing
	}{
		{"a reply from another session is ignored", message.Message{From: strangerAddr, FromSession: "s-work"},
			"reply to a permission prompt from someone other than the approver ignored"},
		{"a reply claiming no address and another session is ignored", message.Message{FromSession: "s-other"},
			"reply to a permission prompt from someone other than the approver ignored"},
		{"the approver's message that starts with no verb is not a reply", message.Message{From: approverAddr}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startApprover(t)
			id := g.raise(t, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`))[0]
			_, _, sub := g.r.Hub().Subscribe(-1)
			defer sub.Close()
			m := tt.from
			m.Body = "allow " + id
			if tt.waitLog == "" {
				m.Body = "Thanks! I will allow " + id + " once the tests pass."
			}
			g.local.say(t, m)
			for ev := range sub.C {
				if ev.Type != message.EventMessage {
					continue // receipts of the notice
				}
				if ev.Message.Body != m.Body {
					t.Fatalf("published %+v, want the message as it came", ev.Message)
				}
				break
			}
			if tt.waitLog != "" {
				g.log.waitFor(t, tt.waitLog)
			}
			if n := len(g.remote.answered()); n != 0 {
				t.Fatalf("the leg got %d answers", n)
			}
			select {
			case sent := <-g.local.sent:
				t.Fatalf("the gateway answered %s: %q", sent.To, sent.Body)
			default:
			}
		})
	}
}

func TestAReplyWrittenByAnotherProcessThanTheApproversIsRefusedAndCounted(t *testing.T) {
	tests := []struct {
		name string
		from message.Message
	}{
		{"the approver's address, written by another session's process", message.Message{From: approverAddr, SenderPID: 10}},
		{"the approver's session id, written by another session's process", message.Message{FromSession: approverSession, SenderPID: 10}},
		{"the approver's address, with no peer credentials", message.Message{From: approverAddr, SenderPID: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startApprover(t)
			id := g.raise(t, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`))[0]
			_, _, sub := g.r.Hub().Subscribe(-1)
			defer sub.Close()
			m := tt.from
			m.ID, m.Body = "forged-1", "allow "+id
			g.local.say(t, m)
			timeout := time.After(10 * time.Second) // only stops a broken test from hanging
		wait:
			for {
				select {
				case ev := <-sub.C:
					if ev.Type == message.EventDrop {
						if ev.Drop.MsgID != "forged-1" || ev.Drop.Reason != message.DropNotApprover || ev.Leg != message.ProtocolClaude {
							t.Fatalf("drop %+v on %s, want forged-1 not-approver on claude", ev.Drop, ev.Leg)
						}
						break wait
					}
				case <-timeout:
					t.Fatal("the forged reply was not refused")
				}
			}
			if n := len(g.remote.answered()); n != 0 {
				t.Fatalf("the leg got %d answers", n)
			}
			if p, _ := g.r.Permission(id); p.State != message.PermissionPending {
				t.Fatalf("state %s, want still pending", p.State)
			}
			// The approver's own process is still heard.
			holdsAll(t, g.ask(t, "allow "+id), "Allowed "+id)
		})
	}
}

func TestAReplyWrittenByTheAliasWorkerStandingForTheApproverCounts(t *testing.T) {
	remote := "bridge:" + legtest.SessionID
	worker := message.Session{Address: "uds:/tmp/cc-socks/77.sock", Protocol: message.ProtocolClaude, Name: "fix-the-bug",
		SessionID: "s-alias", PID: 77, Kind: "alias", Reachable: true, AliasOf: remote}
	tests := []struct {
		name    string
		pid     int
		answers int
	}{
		{"written by another process, it is refused", 10, 0},
		{"written by the alias worker, it counts", 77, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startApproverAt(t, remote, worker)
			pub := g.remote.feed(t, g.r, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`))
			id := pub[0].Permission.ID
			_, _, sub := g.r.Hub().Subscribe(-1)
			defer sub.Close()
			g.local.say(t, message.Message{ID: "via-alias", From: remote, SenderPID: tt.pid, Body: "allow " + id})
			timeout := time.After(10 * time.Second) // only stops a broken test from hanging
			for done := false; !done; {
				select {
				case ev := <-sub.C:
					done = ev.Drop != nil && ev.Drop.MsgID == "via-alias" ||
						ev.Permission != nil && ev.Permission.ID == id && ev.Permission.State == message.PermissionAnswered
				case <-timeout:
					t.Fatal("the reply was neither refused nor applied")
				}
			}
			if n := len(g.remote.answered()); n != tt.answers {
				t.Fatalf("the leg got %d answers, want %d", n, tt.answers)
			}
		})
	}
}

func TestAReplyAfterTheCLIAnsweredIsToldWhoWasFirst(t *testing.T) {
	g := startApprover(t)
	id := g.raise(t, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`))[0]
	if _, err := g.r.AnswerPermission(context.Background(), id, message.PermissionAnswer{Behavior: message.BehaviorAllow, By: "cli"}); err != nil {
		t.Fatal(err)
	}
	// The approver is told at once that the CLI answered...
	holdsAll(t, g.local.next(t).Body, id, "was answered (allow) by cli: nothing left to answer")
	// ...and a reply it sends anyway says who was first.
	holdsAll(t, g.ask(t, "deny "+id+" no"), "Not applied: permission "+id+" was already answered (allow) by cli.")
	if got := g.remote.answered(); len(got) != 1 || got[0].By != "cli" {
		t.Fatalf("the leg got %+v, want the CLI's answer alone", got)
	}
}

func TestTheApproverIsRecognisedAfterItRestarts(t *testing.T) {
	tests := []struct {
		name string
		from message.Message
	}{
		{"by its new address", message.Message{From: "/tmp/cc-socks/13.sock"}},
		{"by its new session id when the address says nothing", message.Message{FromSession: "s-review-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startApprover(t)
			id := g.raise(t, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`))[0]
			holdsAll(t, g.ask(t, "allow pffffff"), "no permission request pffffff") // resolves the first approver
			g.local.fake.SetSessions(stranger, message.Session{Address: "uds:/tmp/cc-socks/13.sock", Protocol: message.ProtocolClaude, Name: "review", SessionID: "s-review-2", PID: 13})
			m := tt.from
			m.Body = "allow " + id
			g.local.say(t, m)
			got := g.local.next(t)
			if got.To != "uds:/tmp/cc-socks/13.sock" {
				t.Fatalf("the answer went to %s, want the restarted approver", got.To)
			}
			holdsAll(t, got.Body, "Allowed "+id)
			if a := g.remote.answered(); len(a) != 1 || a[0].By != "uds:/tmp/cc-socks/13.sock" {
				t.Fatalf("the leg got %+v", a)
			}
		})
	}
}

func TestAFailingNoticeIsRetriedAndThenGivenUp(t *testing.T) {
	tests := []struct {
		name         string
		failures     int
		wantAttempts int
		wantDelays   []time.Duration
		delivered    bool
	}{
		{"a notice that fails twice is sent the third time", 2, 3, []time.Duration{time.Second, 2 * time.Second}, true},
		{"a notice that always fails is given up", 100, sendAttempts, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startApprover(t)
			g.local.failFirst(tt.failures)
			g.remote.feed(t, g.r, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`))
			if tt.delivered {
				holdsAll(t, g.local.next(t).Body, legtest.ShortID(legtest.SessionID, "r1"))
			} else {
				g.log.waitFor(t, "approver notice given up")
			}
			attempts := len(g.local.fake.Sent())
			g.local.failFirst(0)
			g.mu.Lock()
			delays := append([]time.Duration(nil), g.delays...)
			g.mu.Unlock()
			if attempts != tt.wantAttempts || !reflect.DeepEqual(delays, tt.wantDelays) {
				t.Fatalf("%d attempts after waits %v, want %d after %v", attempts, delays, tt.wantAttempts, tt.wantDelays)
			}
			// The router went on meanwhile, and the next notice goes out.
			g.raise(t, legtest.Prompt(legtest.SessionID, "r2", "Bash", `{}`))
		})
	}
}

func TestConcurrentRepliesAndCLIAnswersSettleEachPromptOnce(t *testing.T) {
	g := startApprover(t)
	const n = 20
	var evs []message.Event
	for i := range n {
		evs = append(evs, legtest.Prompt(legtest.SessionID, fmt.Sprint(i), "Bash", `{}`))
	}
	ids := g.raise(t, evs...)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { g.local.say(t, message.Message{From: approverAddr, Body: "allow " + id}) })
		wg.Go(func() {
			_, err := g.r.AnswerPermission(context.Background(), id, message.PermissionAnswer{Behavior: message.BehaviorAllow, By: "cli"})
			if err != nil && !errors.Is(err, message.ErrPermissionSettled) {
				t.Errorf("cli answer: %v", err)
			}
		})
	}
	wg.Wait()
	// Each prompt gets one reply to the approver's answer; those the CLI won
	// also get a notice that the CLI answered.
	approverWon, cliWon, notices := 0, 0, 0
	for approverWon+cliWon < n || notices < cliWon {
		switch body := g.local.next(t).Body; {
		case strings.HasPrefix(body, "Allowed "):
			approverWon++
		case strings.Contains(body, "already answered (allow) by cli"):
			cliWon++
		case strings.Contains(body, "was answered (allow) by cli: nothing left to answer"):
			notices++
		default:
			t.Errorf("unexpected answer %q", body)
		}
	}
	answers := g.remote.answered()
	byApprover := 0
	for _, a := range answers {
		if a.By == approverAddr {
			byApprover++
		}
	}
	if len(answers) != n || byApprover != approverWon {
		t.Fatalf("the leg got %d answers, %d by the approver; want %d, %d", len(answers), byApprover, n, approverWon)
	}
	if len(g.r.Permissions()) != 0 {
		t.Fatal("prompts are still pending")
	}
}

func TestAnAnswerTheLegCannotCarryLeavesThePromptPendingAndSaysSo(t *testing.T) {
	g := startApprover(t)
	g.remote.FailAnswers(errors.New("429 too many requests"))
	id := g.raise(t, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`))[0]
	holdsAll(t, g.ask(t, "allow "+id),
		"Not applied: the answer could not be delivered to the session (429 too many requests). "+id+" is still pending; reply again to retry.")
	if p, _ := g.r.Permission(id); p.State != message.PermissionPending {
		t.Fatalf("state %s, want still pending", p.State)
	}
	g.remote.FailAnswers(nil)
	holdsAll(t, g.ask(t, "allow "+id), "Allowed "+id)
}

func TestNoticesGoOutWhileRepliesHoldEveryWorkerSlot(t *testing.T) {
	tests := []struct {
		name   string
		before int  // notices queued while every slot is taken
		free   bool // whether the slots are freed before the last notice
	}{
		{"a notice below the cap goes out without waiting for a later event", 0, false},
		{"notices go out again once more than the queue holds came while the slots were taken", maxQueued + 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startApprover(t)
			for range maxWorkers {
				g.a.slots <- struct{}{}
			}
			text := func(s string) func(context.Context) string { return func(context.Context) string { return s } }
			for i := range tt.before {
				g.a.enqueue(t.Context(), text(fmt.Sprintf("notice %d", i)))
			}
			if tt.free {
				for range maxWorkers {
					<-g.a.slots
				}
			}
			// The last notice is queued once the queue has room again: when
			// the second notice is out (at once when there was none).
			last := func() { g.a.enqueue(t.Context(), text("the last notice")) }
			if tt.before < 2 {
				last()
			}
			deadline := time.After(3 * time.Second)
			for {
				select {
				case m := <-g.local.sent:
					switch m.Body {
					case "notice 1":
						last()
					case "the last notice":
						return
					}
				case <-deadline:
					t.Fatal("the last notice was not sent")
				}
			}
		})
	}
}
