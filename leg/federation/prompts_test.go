package federation

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/approver"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// promptHost is one host as serve wires it, its router named after the
// host: the local legs, the federation leg, the node serving the router
// and, when approverAddr is set, an approver.
func promptHost(t *testing.T, n *Node, approverAddr string, local ...leg.Leg) *router.Router {
	t.Helper()
	rt := router.New(router.Config{Bridge: true, DefaultMode: message.ModePrompting, Host: n.Host()}, append(local, n.Leg())...)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if approverAddr != "" {
		ap := approver.New(rt, approver.Config{Address: approverAddr})
		wg.Go(func() { _ = ap.Run(ctx) })
	}
	wg.Go(func() { _ = rt.Run(ctx) })
	wg.Go(func() { _ = n.ServeRouter(ctx, rt) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return rt
}

// listed is the prompt of request the router lists, pending or settled.
func listed(rt *router.Router, request string) (message.PermissionRequest, bool) {
	for _, p := range append(rt.Permissions(), rt.SettledPermissions()...) {
		if p.RequestID == request {
			return p, true
		}
	}
	return message.PermissionRequest{}, false
}

func waitListed(t *testing.T, rt *router.Router, request string, state message.PermissionState) message.PermissionRequest {
	t.Helper()
	var got message.PermissionRequest
	testutil.Eventually(t, fmt.Sprintf("%s listed %s", request, state), func() bool {
		p, ok := listed(rt, request)
		got = p
		return ok && p.State == state
	})
	return got
}

func TestAPromptOfOneHostIsListedEverywhereAndAnsweredFromAnother(t *testing.T) {
	c := sharedCluster(t)
	a, b := join(t, c.url(0), "pr-a"), join(t, c.url(1), "pr-b")
	cloud := legtest.NewPromptLeg()
	ra := promptHost(t, a, "", cloud)
	rb := promptHost(t, b, "", newSinkLeg())
	ctx := testutil.Context(t, 30*time.Second)

	cloud.Raise(legtest.Prompt(legtest.SessionID, "req-1", "Bash", `{"command":"go test ./..."}`))
	id := legtest.ShortID(legtest.SessionID, "req-1")
	own := waitListed(t, ra, "req-1", message.PermissionPending)
	if own.Host != "pr-a" || own.ID != id || own.Leg != message.ProtocolRemote {
		t.Fatalf("a lists its own prompt as %+v, want host pr-a", own)
	}
	there := waitListed(t, rb, "req-1", message.PermissionPending)
	if there.Host != "pr-a" || there.ID != id || there.Leg != message.ProtocolFederation || there.ToolName != "Bash" ||
		there.SessionID != legtest.SessionID || string(there.Input) != `{"command":"go test ./..."}` {
		t.Fatalf("b lists a's prompt as %+v", there)
	}

	got, err := rb.AnswerPermission(ctx, id, message.PermissionAnswer{Behavior: message.BehaviorAllow, By: "cli"})
	if err != nil || got.State != message.PermissionAnswered {
		t.Fatalf("b's answer: %+v, %v", got, err)
	}
	answers := cloud.Answers()
	if len(answers) != 1 || answers[0].Behavior != message.BehaviorAllow || answers[0].By != "cli on host pr-b" {
		t.Fatalf("a's remote leg got %+v, want one allow by cli on host pr-b", answers)
	}
	if p := waitListed(t, ra, "req-1", message.PermissionAnswered); p.Answer.By != "cli on host pr-b" {
		t.Fatalf("a settled it as %+v", p.Answer)
	}
	// A second answer from b is told it lost, and never reaches the leg.
	_, err = rb.AnswerPermission(ctx, id, message.PermissionAnswer{Behavior: message.BehaviorDeny, By: "cli"})
	if !errors.Is(err, message.ErrPermissionSettled) {
		t.Fatalf("a late answer: %v, want settled", err)
	}
	if n := len(cloud.Answers()); n != 1 {
		t.Fatalf("the remote leg got %d answers", n)
	}

	// A question is answered by its options, checked on both hosts.
	cloud.Raise(legtest.AskPrompt("req-ask"))
	waitListed(t, rb, "req-ask", message.PermissionPending)
	ask := legtest.ShortID(legtest.SessionID, "req-ask")
	if _, err := rb.AnswerPermission(ctx, ask, message.PermissionAnswer{Behavior: message.BehaviorAllow, By: "cli",
		Answers: map[string][]string{"Which approach?": {"Option C"}, "Which features?": {"Logging"}}}); err == nil {
		t.Fatal("an answer naming no option of the question was taken")
	}
	picked := map[string][]string{"Which approach?": {"Option B"}, "Which features?": {"Logging", "Metrics"}}
	if _, err := rb.AnswerPermission(ctx, ask, message.PermissionAnswer{Behavior: message.BehaviorAllow, By: "cli", Answers: picked}); err != nil {
		t.Fatalf("b's answer to the question: %v", err)
	}
	if answers := cloud.Answers(); len(answers) != 2 || fmt.Sprint(answers[1].Answers) != fmt.Sprint(picked) {
		t.Fatalf("a's remote leg got %+v", answers)
	}

	// A leg that cannot carry the answer leaves the prompt pending on
	// both hosts, and b is told why.
	cloud.Raise(legtest.Prompt(legtest.SessionID, "req-fail", "Bash", `{"command":"make"}`))
	waitListed(t, rb, "req-fail", message.PermissionPending)
	cloud.FailAnswers(errors.New("the cloud is down"))
	_, err = rb.AnswerPermission(ctx, legtest.ShortID(legtest.SessionID, "req-fail"), message.PermissionAnswer{Behavior: message.BehaviorAllow, By: "cli"})
	var le *router.LegError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "the cloud is down") {
		t.Fatalf("an answer a's leg could not carry: %v", err)
	}
	cloud.FailAnswers(nil)
	if p, _ := listed(rb, "req-fail"); p.State != message.PermissionPending {
		t.Fatalf("b settled it as %s", p.State)
	}
	if p, _ := listed(ra, "req-fail"); p.State != message.PermissionPending {
		t.Fatalf("a settled it as %s", p.State)
	}

	// Withdrawn on a: withdrawn on b.
	cloud.Raise(legtest.Prompt(legtest.SessionID, "req-2", "Bash", `{"command":"make"}`))
	waitListed(t, rb, "req-2", message.PermissionPending)
	cloud.Raise(legtest.Withdraw(legtest.SessionID, "req-2"))
	waitListed(t, rb, "req-2", message.PermissionCancelled)

	// A host that vanishes takes its prompts with it, within the TTL.
	cloud.Raise(legtest.Prompt(legtest.SessionID, "req-3", "Bash", `{"command":"ls"}`))
	waitListed(t, rb, "req-3", message.PermissionPending)
	crash(a)
	waitListed(t, rb, "req-3", message.PermissionCancelled)

	// Back on its own name, it lists the prompt pending again: so does b.
	again := join(t, c.url(2), "pr-a", func(cfg *Config) { cfg.Instance, cfg.Key = a.cfg.Instance, a.signer.key })
	cloud2 := legtest.NewPromptLeg()
	promptHost(t, again, "", cloud2)
	cloud2.Raise(legtest.Prompt(legtest.SessionID, "req-3", "Bash", `{"command":"ls"}`))
	if p := waitListed(t, rb, "req-3", message.PermissionPending); p.ID != legtest.ShortID(legtest.SessionID, "req-3") {
		t.Fatalf("b lists it again as %+v", p)
	}
	if _, err := rb.AnswerPermission(ctx, legtest.ShortID(legtest.SessionID, "req-3"), message.PermissionAnswer{Behavior: message.BehaviorAllow, By: "cli"}); err != nil {
		t.Fatalf("answering it again: %v", err)
	}
	if n := len(cloud2.Answers()); n != 1 {
		t.Fatalf("the restarted host's leg got %d answers", n)
	}
}

func TestTheFirstAnswerWinsAcrossHosts(t *testing.T) {
	c := sharedCluster(t)
	a, b, cc := join(t, c.url(0), "win-a"), join(t, c.url(1), "win-b"), join(t, c.url(2), "win-c")
	cloud := legtest.NewPromptLeg()
	cloud.Gate, cloud.Entered = make(chan struct{}), make(chan struct{}, 4)
	promptHost(t, a, "", cloud)
	rb := promptHost(t, b, "", newSinkLeg())
	rc := promptHost(t, cc, "", newSinkLeg())
	ctx := testutil.Context(t, 30*time.Second)

	cloud.Raise(legtest.Prompt(legtest.SessionID, "req-w", "Bash", `{"command":"rm -rf build"}`))
	id := legtest.ShortID(legtest.SessionID, "req-w")
	waitListed(t, rb, "req-w", message.PermissionPending)
	waitListed(t, rc, "req-w", message.PermissionPending)

	// b's answer reaches a's remote leg and is held there; c answers
	// meanwhile, while every host still lists the prompt pending.
	errs := make(chan error, 2)
	go func() {
		_, err := rb.AnswerPermission(ctx, id, message.PermissionAnswer{Behavior: message.BehaviorAllow, By: "cli"})
		errs <- err
	}()
	<-cloud.Entered
	go func() {
		_, err := rc.AnswerPermission(ctx, id, message.PermissionAnswer{Behavior: message.BehaviorDeny, Message: "no", By: "cli"})
		errs <- err
	}()
	close(cloud.Gate)
	var won, lost int
	for range 2 {
		err := <-errs
		var se *message.SettledError
		switch {
		case err == nil:
			won++
		case errors.As(err, &se):
			lost++
			if se.By != "cli on host win-b" || se.Behavior != message.BehaviorAllow || !strings.Contains(err.Error(), "already answered (allow) by cli on host win-b") {
				t.Errorf("the loser was told %q (%+v)", err, se)
			}
		default:
			t.Errorf("an answer failed: %v", err)
		}
	}
	if won != 1 || lost != 1 {
		t.Fatalf("%d answers won and %d lost, want one each", won, lost)
	}
	if answers := cloud.Answers(); len(answers) != 1 || answers[0].By != "cli on host win-b" {
		t.Fatalf("the remote leg got %+v, want b's answer alone", answers)
	}
	// c settled it as lost to b; so does b's own list.
	if p := waitListed(t, rc, "req-w", message.PermissionAnswered); p.Answer == nil || p.Answer.By != "cli on host win-b" {
		t.Fatalf("c settled it as %+v", p.Answer)
	}
}

func TestAnAnswerThatArrivesAfterItExpiredIsNotApplied(t *testing.T) {
	c := sharedCluster(t)
	a := join(t, c.url(0), "exp-a")
	cloud := legtest.NewPromptLeg()
	ra := promptHost(t, a, "", cloud)
	cloud.Raise(legtest.Prompt(legtest.SessionID, "req-x", "Bash", `{"command":"ls"}`))
	p := waitListed(t, ra, "req-x", message.PermissionPending)
	o := a.applyAnswer(testutil.Context(t, 10*time.Second), ra, "exp-b", promptAnswer{ID: "late", Prompt: p.ID, SessionID: p.SessionID,
		RequestID: p.RequestID, Expires: time.Now().Add(-time.Second), Answer: message.PermissionAnswer{Behavior: message.BehaviorAllow}})
	if o.Result != outcomeExpired || len(cloud.Answers()) != 0 {
		t.Fatalf("outcome %+v, leg answers %d", o, len(cloud.Answers()))
	}
	o = a.applyAnswer(testutil.Context(t, 10*time.Second), ra, "exp-b", promptAnswer{ID: "wrong", Prompt: p.ID, SessionID: p.SessionID,
		RequestID: "another", Expires: time.Now().Add(time.Minute), Answer: message.PermissionAnswer{Behavior: message.BehaviorAllow}})
	if o.Result != outcomeUnknown || len(cloud.Answers()) != 0 {
		t.Fatalf("an answer naming another request: outcome %+v", o)
	}
}

// approverLeg is a local leg (fake) with one session, the approver: it
// hands every message the gateway sends it to sent, and say brings its
// replies.
type approverLeg struct {
	fake *legtest.Fake
	sent chan message.Message
}

const reviewAddr = "uds:/run/review.sock"

func newApproverLeg() *approverLeg {
	l := &approverLeg{sent: make(chan message.Message, 64), fake: legtest.New(message.ProtocolClaude,
		message.Session{Address: reviewAddr, Protocol: message.ProtocolClaude, Name: "review", SessionID: "s-review", PID: 7, Reachable: true})}
	l.fake.OnSend = func(_ context.Context, m message.Message) (message.Receipt, error) {
		l.sent <- m
		return message.Receipt{MsgID: m.ID, Status: message.StatusSent}, nil
	}
	return l
}

func (l *approverLeg) say(t *testing.T, body string) {
	l.fake.Emit(t, message.Event{Type: message.EventMessage, Leg: message.ProtocolClaude, Message: &message.Message{
		ID: "reply-" + randomID(), From: reviewAddr, FromSession: "s-review", Protocol: message.ProtocolClaude, Body: body,
		SenderPID: 7}}) // written by the approver's process, as the Claude leg's peer credentials say
}

// next is the next notice whose body holds want.
func (l *approverLeg) next(t *testing.T, ctx context.Context, want string) string {
	t.Helper()
	for {
		select {
		case m := <-l.sent:
			if strings.Contains(m.Body, want) {
				return m.Body
			}
		case <-ctx.Done():
			t.Fatalf("the approver was never sent %q", want)
		}
	}
}

func TestAnApproverOnAnotherHostAnswersAPrompt(t *testing.T) {
	c := sharedCluster(t)
	a, b := join(t, c.url(0), "ap-a"), join(t, c.url(1), "ap-b")
	cloud := legtest.NewPromptLeg()
	promptHost(t, a, "", cloud)
	review := newApproverLeg()
	promptHost(t, b, "review", review.fake)
	ctx := testutil.Context(t, 30*time.Second)

	cloud.Raise(legtest.Prompt(legtest.SessionID, "req-ap", "Bash", `{"command":"go vet"}`))
	id := legtest.ShortID(legtest.SessionID, "req-ap")
	notice := review.next(t, ctx, "Permission request "+id)
	if !strings.Contains(notice, "on host ap-a") || !strings.Contains(notice, "allow "+id) {
		t.Fatalf("the approver was shown:\n%s", notice)
	}
	review.say(t, "allow "+id)
	done := review.next(t, ctx, id)
	if !strings.HasPrefix(done, "Allowed "+id) {
		t.Fatalf("the approver was told:\n%s", done)
	}
	answers := cloud.Answers()
	if len(answers) != 1 || answers[0].Behavior != message.BehaviorAllow || answers[0].By != reviewAddr+" on host ap-b" {
		t.Fatalf("a's remote leg got %+v", answers)
	}
	// Replying again is told it lost.
	review.say(t, "deny "+id+" too late")
	if late := review.next(t, ctx, id); !strings.HasPrefix(late, "Not applied") || !strings.Contains(late, "already answered") {
		t.Fatalf("a late reply was told:\n%s", late)
	}
}

func TestHostilePromptListsAreDroppedAndCounted(t *testing.T) {
	n := testNode(t, "self")
	evil := testSigner(t)
	n.keys.check("evil", evil.key.Public().(ed25519.PublicKey), true) // as from its roster entry
	good := func(mod func(*envelope)) []byte {
		e := envelope{Kind: kindPrompts, From: "evil", To: "evil", Prompts: []message.PermissionRequest{
			{ID: "p1", SessionID: "s", RequestID: "r", ToolName: "Bash", State: message.PermissionPending}}}
		if mod != nil {
			mod(&e)
		}
		b, err := evil.envelope(e)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name   string
		key    string
		value  []byte
		reason Reason
	}{
		{"not JSON", "evil", []byte("{"), ReasonMalformed},
		{"oversized", "evil", make([]byte, MaxEnvelope+1), ReasonOversized},
		{"another version", "evil", []byte(`{"v":9}`), ReasonVersion},
		{"under another host's key", "other", good(nil), ReasonMisrouted},
		{"another kind", "evil", good(func(e *envelope) {
			e.Kind, e.Prompts = kindReceipt, nil
			e.Receipt = &message.Receipt{MsgID: "m", Status: message.StatusDelivered}
		}), ReasonMisrouted},
		{"a prompt without a request id", "evil", good(func(e *envelope) { e.Prompts[0].RequestID = "" }), ReasonMalformed},
		{"a prompt in no state", "evil", good(func(e *envelope) { e.Prompts[0].State = "maybe" }), ReasonMalformed},
		{"too many prompts", "evil", good(func(e *envelope) {
			for i := range maxHostPrompts {
				e.Prompts = append(e.Prompts, message.PermissionRequest{ID: "p", SessionID: "s", RequestID: fmt.Sprint(i), State: message.PermissionPending})
			}
		}), ReasonMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := n.Dropped()[tc.reason]
			if evs := n.heardPrompts(tc.key, true, tc.value, time.Now()); len(evs) != 0 {
				t.Fatalf("raised %+v", evs)
			}
			if got := n.Dropped()[tc.reason]; got != before+1 {
				t.Fatalf("%s counted %d times, want 1", tc.reason, got-before)
			}
		})
	}
	if evs := n.heardPrompts("evil", true, good(nil), time.Now()); len(evs) != 1 || evs[0].Permission.Host != "evil" {
		t.Fatalf("a good list raised %+v", evs)
	}
	if evs := n.heardPrompts("self", true, good(nil), time.Now()); len(evs) != 0 {
		t.Fatalf("this host's own list raised %+v", evs)
	}
}

func TestHostileAnswersAndOutcomesAreDropped(t *testing.T) {
	answer := promptAnswer{ID: "ans", Prompt: "p1", SessionID: "s", RequestID: "r", Answer: message.PermissionAnswer{Behavior: message.BehaviorAllow}}
	cases := []struct {
		name string
		e    envelope
	}{
		{"an answer without an id", envelope{Kind: kindAnswer, Answer: &promptAnswer{Prompt: "p1", SessionID: "s", RequestID: "r", Answer: answer.Answer}}},
		{"an answer with no verdict", envelope{Kind: kindAnswer, Answer: &promptAnswer{ID: "x", Prompt: "p1", SessionID: "s", RequestID: "r"}}},
		{"an answer with a message too", envelope{Kind: kindAnswer, Answer: &answer, Message: &message.Message{ID: "m", To: "x"}}},
		{"an outcome of no kind", envelope{Kind: kindOutcome, Outcome: &answerOutcome{ID: "ans", Result: "maybe"}}},
		{"a settled outcome in no state", envelope{Kind: kindOutcome, Outcome: &answerOutcome{ID: "ans", Result: outcomeSettled}}},
		{"an outcome without one", envelope{Kind: kindOutcome}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.e.From, tc.e.To = "evil", "self"
			b, err := testSigner(t).envelope(tc.e)
			if err != nil {
				t.Fatal(err)
			}
			if _, reason := parse(b, "self"); reason != ReasonMalformed {
				t.Fatalf("reason %v, want malformed", reason)
			}
		})
	}
	// An outcome from another host than the answer went to is dropped.
	n := &Node{cfg: Config{Clock: clock.Real{}, Host: "self"}, log: discard()}
	n.pr.init("self")
	w := waiter{host: "a", ch: make(chan answerOutcome, 1)}
	n.pr.waiting["ans"] = w
	n.outcomeIn(envelope{Kind: kindOutcome, From: "evil", To: "self", Outcome: &answerOutcome{ID: "ans", Result: outcomeAnswered}})
	if n.Dropped()[ReasonMisrouted] != 1 || len(w.ch) != 0 {
		t.Fatalf("a spoofed outcome: drops %v, delivered %d", n.Dropped(), len(w.ch))
	}
}

func FuzzPromptList(f *testing.F) {
	sg := testSigner(f)
	b, _ := sg.envelope(envelope{Kind: kindPrompts, From: "h", To: "h", Prompts: []message.PermissionRequest{
		{ID: "p1", SessionID: "s", RequestID: "r", ToolName: "Bash", State: message.PermissionPending}}})
	f.Add(b)
	b, _ = sg.envelope(envelope{Kind: kindAnswer, From: "h", To: "h", Answer: &promptAnswer{ID: "a", Prompt: "p", SessionID: "s", RequestID: "r",
		Answer: message.PermissionAnswer{Behavior: message.BehaviorAllow, Answers: map[string][]string{"q": {"x"}}}}})
	f.Add(b)
	b, _ = sg.envelope(envelope{Kind: kindOutcome, From: "h", To: "h", Outcome: &answerOutcome{ID: "a", Result: outcomeSettled, State: message.PermissionAnswered}})
	f.Add(b)
	f.Add([]byte(`{"v":1,"kind":"prompts","from_host":"h","to_host":"h","prompts":[{}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		n := testNode(t, "self")
		evs := n.heardPrompts("h", true, b, time.Now())
		if len(evs) > maxHostPrompts {
			t.Fatalf("%d events from one list", len(evs))
		}
		for _, ev := range evs {
			if p := ev.Permission; p == nil || p.Host != "h" || p.Leg != message.ProtocolFederation || p.ID != "" {
				t.Fatalf("raised %+v", ev.Permission)
			}
		}
		if e, reason := parse(b, "h"); reason == 0 && e.Kind == kindOutcome {
			n.outcomeIn(e) // nobody waits: let go
		}
	})
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// testNode is a node with no connection: a key, pins in memory.
func testNode(t testing.TB, host string) *Node {
	t.Helper()
	n := &Node{cfg: Config{Clock: clock.Real{}, Host: host, ReplayWindow: DefaultReplayWindow}, log: discard(), nonces: newNonces(), signer: testSigner(t)}
	var err error
	if n.keys, err = newKeyring(Config{}, n.log); err != nil {
		t.Fatal(err)
	}
	n.pr.init(host)
	return n
}

func TestAFullAnswerFromAnotherHostCarriesItsSuggestionsModeAndInput(t *testing.T) {
	c := sharedCluster(t)
	a, b := join(t, c.url(0), "fa-a"), join(t, c.url(1), "fa-b")
	cloud := legtest.NewPromptLeg()
	promptHost(t, a, "", cloud)
	rb := promptHost(t, b, "", newSinkLeg())
	ctx := testutil.Context(t, 30*time.Second)

	ev := legtest.Prompt(legtest.SessionID, "req-full", "Bash", `{"command":"npm test"}`)
	ev.Permission.Suggestions = []message.PermissionUpdate{
		{Type: message.UpdateAddRules, Behavior: "allow", Destination: "localSettings", Rules: []message.PermissionRule{{ToolName: "Bash", RuleContent: "npm test"}}},
		{Type: message.UpdateAddDirectories, Destination: "session", Directories: []string{"/tmp/build"}},
	}
	cloud.Raise(ev, legtest.AskPrompt("req-ask"))
	there := waitListed(t, rb, "req-full", message.PermissionPending)
	if there.Kind != message.PromptToolUse || len(there.Suggestions) != 2 || there.Suggestions[1].Directories[0] != "/tmp/build" {
		t.Fatalf("b lists a's prompt as %+v", there)
	}
	if ask := waitListed(t, rb, "req-ask", message.PermissionPending); ask.Kind != message.PromptQuestion || fmt.Sprint(ask.Verbs) != "[answer deny]" {
		t.Fatalf("b lists a's question as %+v", ask)
	}
	// Checked on b against b's copy, before anything travels.
	_, err := rb.AnswerPermission(ctx, there.ID, message.PermissionAnswer{Behavior: message.BehaviorAllow, Suggestions: []int{3}})
	var ie *message.InvalidAnswerError
	if !errors.As(err, &ie) || ie.Problem != message.AnswerBadSuggestion {
		t.Fatalf("suggestion 3 of 2: %v", err)
	}
	_, err = rb.AnswerPermission(ctx, legtest.ShortID(legtest.SessionID, "req-ask"), message.PermissionAnswer{Behavior: message.BehaviorAllow})
	if !errors.As(err, &ie) || ie.Problem != message.AnswerQuestionNeedsAnswers {
		t.Fatalf("allow on a question: %v", err)
	}
	want := message.PermissionAnswer{Behavior: message.BehaviorAllow, Suggestions: []int{2, 1}, Mode: "acceptEdits",
		UpdatedInput: json.RawMessage(`{"command":"npm test -- --ci"}`), By: "cli"}
	if _, err := rb.AnswerPermission(ctx, there.ID, want); err != nil {
		t.Fatal(err)
	}
	answers := cloud.Answers()
	want.By = "cli on host fa-b"
	if len(answers) != 1 || !reflect.DeepEqual(answers[0], want) {
		t.Fatalf("a's remote leg got %+v, want %+v", answers, want)
	}
}
