package router

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
)

// feed sends evs from the leg and returns the permission events the router
// published for them. A session event after them marks the end: the router
// handles one leg event at a time, in order.
func feed(t *testing.T, r *Router, l *legtest.PromptLeg, evs ...message.Event) []message.Event {
	t.Helper()
	<-l.Started()
	_, _, sub := r.Hub().Subscribe(-1)
	defer sub.Close()
	l.Raise(append(evs, message.Event{Type: message.EventSession})...)
	var got []message.Event
	for ev := range sub.C {
		switch ev.Type {
		case message.EventSession:
			return got
		case message.EventPermission:
			got = append(got, ev)
		}
	}
	t.Fatalf("subscription ended: %v", sub.Err())
	return nil
}

func requestIDs(ps []message.PermissionRequest) []string {
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.RequestID)
	}
	return ids
}

func states(evs []message.Event) []string {
	var ss []string
	for _, ev := range evs {
		ss = append(ss, ev.Permission.RequestID+":"+string(ev.Permission.State))
	}
	return ss
}

func TestTheBrokerKeepsOnePromptPerSessionAndRequest(t *testing.T) {
	tests := []struct {
		name          string
		events        []message.Event
		wantPublished []string
		wantPending   []string
	}{
		{"a new prompt is pending and published",
			[]message.Event{legtest.Prompt(legtest.SessionID, "r1", "Bash", `{"command":"ls"}`)},
			[]string{"r1:pending"}, []string{"r1"}},
		{"a prompt raised again after a reconnect is neither repeated nor republished",
			[]message.Event{legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`), legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`)},
			[]string{"r1:pending"}, []string{"r1"}},
		{"a withdrawn prompt leaves the pending list",
			[]message.Event{legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`), legtest.Prompt(legtest.SessionID, "r2", "Edit", `{}`), legtest.Withdraw(legtest.SessionID, "r1")},
			[]string{"r1:pending", "r2:pending", "r1:cancelled"}, []string{"r2"}},
		{"a withdrawal of an unknown prompt is ignored",
			[]message.Event{legtest.Withdraw(legtest.SessionID, "nope")},
			nil, nil},
		{"a withdrawal repeated after a replay is published once",
			[]message.Event{legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`), legtest.Withdraw(legtest.SessionID, "r1"), legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`), legtest.Withdraw(legtest.SessionID, "r1")},
			[]string{"r1:pending", "r1:cancelled"}, nil},
		{"the same request id in two sessions is two prompts",
			[]message.Event{legtest.Prompt("session_a", "r1", "Bash", `{}`), legtest.Prompt("session_b", "r1", "Bash", `{}`)},
			[]string{"r1:pending", "r1:pending"}, []string{"r1", "r1"}},
		{"a prompt without a request id is dropped",
			[]message.Event{legtest.Prompt(legtest.SessionID, "", "Bash", `{}`)},
			nil, nil},
		{"an answer of an unknown prompt seen by a leg is ignored",
			[]message.Event{{Type: message.EventPermission, Permission: &message.PermissionRequest{SessionID: legtest.SessionID, RequestID: "r1", State: message.PermissionAnswered}}},
			nil, nil},
		{"a prompt a leg saw answered elsewhere leaves the pending list as answered",
			[]message.Event{legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`), legtest.Prompt(legtest.SessionID, "r2", "Bash", `{}`),
				{Type: message.EventPermission, Permission: &message.PermissionRequest{SessionID: legtest.SessionID, RequestID: "r1", State: message.PermissionAnswered}}},
			[]string{"r1:pending", "r2:pending", "r1:answered"}, []string{"r2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leg := legtest.NewPromptLeg()
			r := start(t, leg)
			got := feed(t, r, leg, tt.events...)
			if fmt.Sprint(states(got)) != fmt.Sprint(tt.wantPublished) {
				t.Errorf("published %v, want %v", states(got), tt.wantPublished)
			}
			for _, ev := range got {
				p := ev.Permission
				if p.ID != legtest.ShortID(p.SessionID, p.RequestID) || p.Leg != message.ProtocolRemote || p.Created.IsZero() {
					t.Errorf("published %+v: want the short id, the leg and a creation time", p)
				}
			}
			if ids := requestIDs(r.Permissions()); fmt.Sprint(ids) != fmt.Sprint(tt.wantPending) {
				t.Errorf("pending %v, want %v", ids, tt.wantPending)
			}
		})
	}
}

func TestAWithdrawnPromptStaysReadableAsCancelled(t *testing.T) {
	leg := legtest.NewPromptLeg()
	r := start(t, leg)
	feed(t, r, leg, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`), legtest.Withdraw(legtest.SessionID, "r1"))
	id := legtest.ShortID(legtest.SessionID, "r1")
	p, err := r.Permission(id)
	if err != nil || p.State != message.PermissionCancelled || p.ToolName != "Bash" {
		t.Fatalf("Permission = %+v, %v; want the prompt, cancelled", p, err)
	}
	if s := r.SettledPermissions(); len(s) != 1 || s[0].ID != id {
		t.Fatalf("settled = %+v", s)
	}
	_, err = r.AnswerPermission(context.Background(), id, message.PermissionAnswer{Behavior: message.BehaviorAllow})
	var se *message.SettledError
	if !errors.As(err, &se) || se.State != message.PermissionCancelled || !errors.Is(err, message.ErrPermissionSettled) {
		t.Fatalf("answering a withdrawn prompt: %v, want a settled error saying cancelled", err)
	}
	if n := len(leg.Answers()); n != 0 {
		t.Fatalf("the leg got %d answers for a withdrawn prompt", n)
	}
}

func TestPendingPromptsListOldestFirst(t *testing.T) {
	leg := legtest.NewPromptLeg()
	r := start(t, leg)
	t0 := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	late, early := legtest.Prompt(legtest.SessionID, "late", "Bash", `{}`), legtest.Prompt(legtest.SessionID, "early", "Bash", `{}`)
	late.Permission.Created, early.Permission.Created = t0.Add(time.Minute), t0
	feed(t, r, leg, late, early, legtest.Prompt(legtest.SessionID, "unstamped", "Bash", `{}`))
	if ids := requestIDs(r.Permissions()); fmt.Sprint(ids) != "[early late unstamped]" {
		t.Fatalf("pending %v, want oldest first", ids)
	}
}

func TestShortIDsGrowOnACollision(t *testing.T) {
	var b permBroker
	k := permKey{legtest.SessionID, "r1"}
	sum := sha256.Sum256([]byte(k.session + "\x00" + k.request))
	h := hex.EncodeToString(sum[:])
	b.byID = map[string]*permEntry{}
	if got := b.newID(k); got != "p"+h[:6] {
		t.Fatalf("id %q, want p and 6 hex digits of the hash", got)
	}
	b.byID["p"+h[:6]] = &permEntry{}
	if got := b.newID(k); got != "p"+h[:8] {
		t.Fatalf("id %q after a collision, want 8 hex digits", got)
	}
}

func TestTheSettledHistoryIsBounded(t *testing.T) {
	leg := legtest.NewPromptLeg()
	r := start(t, leg)
	n := keepSettledPermissions + 10
	for i := range n {
		feed(t, r, leg, legtest.Prompt(legtest.SessionID, fmt.Sprint(i), "Bash", `{}`), legtest.Withdraw(legtest.SessionID, fmt.Sprint(i)))
	}
	if s := r.SettledPermissions(); len(s) != keepSettledPermissions || s[len(s)-1].RequestID != fmt.Sprint(n-1) {
		t.Fatalf("kept %d settled, want the last %d", len(s), keepSettledPermissions)
	}
	if _, err := r.Permission(legtest.ShortID(legtest.SessionID, "0")); !errors.Is(err, message.ErrNoPermission) {
		t.Fatalf("the oldest settled prompt: %v, want forgotten", err)
	}
}

// withSuggestions is a Bash prompt offering n suggestions.
func withSuggestions(n int) message.Event {
	ev := legtest.Prompt(legtest.SessionID, "r", "Bash", `{"command":"ls"}`)
	for i := range n {
		ev.Permission.Suggestions = append(ev.Permission.Suggestions, message.PermissionUpdate{Type: message.UpdateAddDirectories, Directories: []string{fmt.Sprint("/d", i)}})
	}
	return ev
}

func TestAnswersAreCheckedBeforeTheyReachTheLeg(t *testing.T) {
	allow := message.BehaviorAllow
	tests := []struct {
		name    string
		prompt  message.Event
		answer  message.PermissionAnswer
		problem message.AnswerProblem // 0: accepted
	}{
		{"a plain allow is accepted", legtest.Prompt(legtest.SessionID, "r", "Bash", `{"command":"ls"}`), message.PermissionAnswer{Behavior: allow}, 0},
		{"a deny with a message is accepted", legtest.Prompt(legtest.SessionID, "r", "Bash", `{}`), message.PermissionAnswer{Behavior: message.BehaviorDeny, Message: "not now"}, 0},
		{"an allow with an object input and a rule is accepted", legtest.Prompt(legtest.SessionID, "r", "Bash", `{}`),
			message.PermissionAnswer{Behavior: allow, UpdatedInput: json.RawMessage(`{"command":"ls -l"}`), Rules: []message.PermissionRule{{ToolName: "Bash", RuleContent: "ls:*"}}, RuleDestination: "session"}, 0},
		{"a missing behavior is refused", legtest.Prompt(legtest.SessionID, "r", "Bash", `{}`), message.PermissionAnswer{}, message.AnswerBadBehavior},
		{"a made-up behavior is refused", legtest.Prompt(legtest.SessionID, "r", "Bash", `{}`), message.PermissionAnswer{Behavior: "maybe"}, message.AnswerBadBehavior},
		{"a deny with input is refused", legtest.Prompt(legtest.SessionID, "r", "Bash", `{}`), message.PermissionAnswer{Behavior: message.BehaviorDeny, UpdatedInput: json.RawMessage(`{}`)}, message.AnswerDenyWithInput},
		{"a deny with answers is refused", legtest.AskPrompt("r"), message.PermissionAnswer{Behavior: message.BehaviorDeny, Answers: map[string][]string{"Which approach?": {"Option A"}}}, message.AnswerDenyWithInput},
		{"an input that is a list is refused", legtest.Prompt(legtest.SessionID, "r", "Bash", `{}`), message.PermissionAnswer{Behavior: allow, UpdatedInput: json.RawMessage(`["ls"]`)}, message.AnswerInputNotObject},
		{"an input that is null is refused", legtest.Prompt(legtest.SessionID, "r", "Bash", `{}`), message.PermissionAnswer{Behavior: allow, UpdatedInput: json.RawMessage(`null`)}, message.AnswerInputNotObject},
		{"an input that is not JSON is refused", legtest.Prompt(legtest.SessionID, "r", "Bash", `{}`), message.PermissionAnswer{Behavior: allow, UpdatedInput: json.RawMessage(`{`)}, message.AnswerInputNotObject},
		{"a rule without a tool is refused", legtest.Prompt(legtest.SessionID, "r", "Bash", `{}`), message.PermissionAnswer{Behavior: allow, Rules: []message.PermissionRule{{RuleContent: "ls"}}}, message.AnswerBadRule},
		{"a rule whose tool still has its parentheses is refused", legtest.Prompt(legtest.SessionID, "r", "Bash", `{}`), message.PermissionAnswer{Behavior: allow, Rules: []message.PermissionRule{{ToolName: "Bash(ls)"}}}, message.AnswerBadRule},
		{"an unknown rule destination is refused", legtest.Prompt(legtest.SessionID, "r", "Bash", `{}`), message.PermissionAnswer{Behavior: allow, Rules: []message.PermissionRule{{ToolName: "Bash"}}, RuleDestination: "everywhere"}, message.AnswerBadDestination},
		{"answers to a prompt that asks no questions are refused", legtest.Prompt(legtest.SessionID, "r", "Bash", `{}`), message.PermissionAnswer{Behavior: allow, Answers: map[string][]string{"Q": {"A"}}}, message.AnswerNotAQuestion},
		{"answers to every question are accepted", legtest.AskPrompt("r"),
			message.PermissionAnswer{Behavior: allow, Answers: map[string][]string{"Which approach?": {"Option B"}, "Which features?": {"Metrics", "Logging"}}}, 0},
		{"an answer to a question the prompt did not ask is refused", legtest.AskPrompt("r"),
			message.PermissionAnswer{Behavior: allow, Answers: map[string][]string{"Which approach?": {"Option B"}, "Which features?": {"Logging"}, "Why?": {"x"}}}, message.AnswerUnknownQuestion},
		{"a question left unanswered is refused", legtest.AskPrompt("r"),
			message.PermissionAnswer{Behavior: allow, Answers: map[string][]string{"Which approach?": {"Option B"}}}, message.AnswerMissingQuestion},
		{"two options for a single-select question are refused", legtest.AskPrompt("r"),
			message.PermissionAnswer{Behavior: allow, Answers: map[string][]string{"Which approach?": {"Option A", "Option B"}, "Which features?": {"Logging"}}}, message.AnswerOneOption},
		{"no option for a multi-select question is refused", legtest.AskPrompt("r"),
			message.PermissionAnswer{Behavior: allow, Answers: map[string][]string{"Which approach?": {"Option A"}, "Which features?": {}}}, message.AnswerNoOption},
		{"a label that is not an option is refused", legtest.AskPrompt("r"),
			message.PermissionAnswer{Behavior: allow, Answers: map[string][]string{"Which approach?": {"Option C"}, "Which features?": {"Logging"}}}, message.AnswerUnknownOption},
		{"a label given twice is refused", legtest.AskPrompt("r"),
			message.PermissionAnswer{Behavior: allow, Answers: map[string][]string{"Which approach?": {"Option A"}, "Which features?": {"Logging", "Logging"}}}, message.AnswerRepeatedOption},
		{"an allow of a question without answers is refused", legtest.AskPrompt("r"), message.PermissionAnswer{Behavior: allow}, message.AnswerQuestionNeedsAnswers},
		{"an allow of a question whose input carries its answers is accepted", legtest.AskPrompt("r"),
			message.PermissionAnswer{Behavior: allow, UpdatedInput: json.RawMessage(`{"answers":{"Which approach?":"Option A"}}`)}, 0},
		{"the session's suggestions by number are accepted", withSuggestions(2), message.PermissionAnswer{Behavior: allow, Suggestions: []int{2, 1}}, 0},
		{"a suggestion the session did not offer is refused", withSuggestions(2), message.PermissionAnswer{Behavior: allow, Suggestions: []int{3}}, message.AnswerBadSuggestion},
		{"suggestion 0 is refused: they count from 1", withSuggestions(2), message.PermissionAnswer{Behavior: allow, Suggestions: []int{0}}, message.AnswerBadSuggestion},
		{"a suggestion given twice is refused", withSuggestions(2), message.PermissionAnswer{Behavior: allow, Suggestions: []int{1, 1}}, message.AnswerBadSuggestion},
		{"a plan approved with a mode switch is accepted", legtest.Prompt(legtest.SessionID, "r", "ExitPlanMode", `{"plan":"x"}`), message.PermissionAnswer{Behavior: allow, Mode: "acceptEdits"}, 0},
		{"a switch to no permission mode is refused", legtest.Prompt(legtest.SessionID, "r", "ExitPlanMode", `{"plan":"x"}`), message.PermissionAnswer{Behavior: allow, Mode: "yolo"}, message.AnswerBadMode},
		{"a deny with a mode switch is refused", legtest.Prompt(legtest.SessionID, "r", "ExitPlanMode", `{"plan":"x"}`), message.PermissionAnswer{Behavior: message.BehaviorDeny, Mode: "plan"}, message.AnswerDenyWithUpdates},
		{"a deny with suggestions is refused", withSuggestions(1), message.PermissionAnswer{Behavior: message.BehaviorDeny, Suggestions: []int{1}}, message.AnswerDenyWithUpdates},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leg := legtest.NewPromptLeg()
			r := start(t, leg)
			pub := feed(t, r, leg, tt.prompt)
			id := pub[0].Permission.ID
			got, err := r.AnswerPermission(context.Background(), id, tt.answer)
			if tt.problem == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if got.State != message.PermissionAnswered || len(leg.Answers()) != 1 {
					t.Fatalf("state %s, leg answers %d; want answered once", got.State, len(leg.Answers()))
				}
				return
			}
			var ie *message.InvalidAnswerError
			if !errors.As(err, &ie) || ie.Problem != tt.problem || ie.ID != id {
				t.Fatalf("err = %v, want an invalid answer (%s)", err, tt.problem)
			}
			if len(leg.Answers()) != 0 {
				t.Fatal("an invalid answer reached the leg")
			}
			if p, _ := r.Permission(id); p.State != message.PermissionPending {
				t.Fatalf("state %s after an invalid answer, want still pending", p.State)
			}
		})
	}
}

func TestAnsweringSettlesThePromptOnce(t *testing.T) {
	leg := legtest.NewPromptLeg()
	r := start(t, leg)
	id := feed(t, r, leg, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{"command":"go test ./..."}`))[0].Permission.ID
	_, _, sub := r.Hub().Subscribe(-1)
	defer sub.Close()

	got, err := r.AnswerPermission(context.Background(), id, message.PermissionAnswer{Behavior: message.BehaviorAllow, By: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if got.State != message.PermissionAnswered || got.Answer == nil || got.Answer.By != "cli" {
		t.Fatalf("answered = %+v", got)
	}
	ev := <-sub.C
	if ev.Type != message.EventPermission || ev.Permission.ID != id || ev.Permission.State != message.PermissionAnswered {
		t.Fatalf("published %+v, want the answered prompt", ev)
	}
	if len(r.Permissions()) != 0 {
		t.Fatal("an answered prompt is still pending")
	}
	t.Run("a second answer is refused with who answered", func(t *testing.T) {
		_, err := r.AnswerPermission(context.Background(), id, message.PermissionAnswer{Behavior: message.BehaviorDeny, By: "api"})
		var se *message.SettledError
		if !errors.As(err, &se) || se.State != message.PermissionAnswered || se.By != "cli" || se.Behavior != message.BehaviorAllow {
			t.Fatalf("err = %v, want settled: answered (allow) by cli", err)
		}
		if n := len(leg.Answers()); n != 1 {
			t.Fatalf("the leg got %d answers, want 1", n)
		}
	})
	t.Run("the prompt raised again after a reconnect stays answered", func(t *testing.T) {
		if pub := feed(t, r, leg, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`)); len(pub) != 0 {
			t.Fatalf("republished %v", states(pub))
		}
		if p, _ := r.Permission(id); p.State != message.PermissionAnswered {
			t.Fatalf("state %s", p.State)
		}
	})
	t.Run("a withdrawal after the answer does not undo it", func(t *testing.T) {
		if pub := feed(t, r, leg, legtest.Withdraw(legtest.SessionID, "r1")); len(pub) != 0 {
			t.Fatalf("published %v", states(pub))
		}
		if p, _ := r.Permission(id); p.State != message.PermissionAnswered {
			t.Fatalf("state %s", p.State)
		}
	})
}

func TestConcurrentAnswersReachTheLegOnce(t *testing.T) {
	leg := legtest.NewPromptLeg()
	leg.Gate, leg.Entered = make(chan struct{}), make(chan struct{}, 1)
	r := start(t, leg)
	id := feed(t, r, leg, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`))[0].Permission.ID

	const n = 16
	errs := make(chan error, n)
	go func() {
		_, err := r.AnswerPermission(context.Background(), id, message.PermissionAnswer{Behavior: message.BehaviorAllow, By: "first"})
		errs <- err
	}()
	<-leg.Entered // the first answer is in flight
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Go(func() {
			_, err := r.AnswerPermission(context.Background(), id, message.PermissionAnswer{Behavior: message.BehaviorDeny, By: fmt.Sprint(i)})
			errs <- err
		})
	}
	close(leg.Gate)
	wg.Wait()
	var ok, settled int
	for range n {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, message.ErrPermissionSettled):
			settled++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if ok != 1 || settled != n-1 {
		t.Fatalf("%d succeeded and %d saw it settled, want 1 and %d", ok, settled, n-1)
	}
	if a := leg.Answers(); len(a) != 1 || a[0].By != "first" {
		t.Fatalf("the leg got %+v, want the first answer alone", a)
	}
}

func TestALegErrorLeavesThePromptPending(t *testing.T) {
	leg := legtest.NewPromptLeg()
	leg.FailAnswers(errors.New("429 too many requests"))
	r := start(t, leg)
	id := feed(t, r, leg, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`))[0].Permission.ID
	_, err := r.AnswerPermission(context.Background(), id, message.PermissionAnswer{Behavior: message.BehaviorAllow})
	var le *LegError
	if !errors.As(err, &le) || le.Leg != message.ProtocolRemote || le.Op != "answer" {
		t.Fatalf("err = %v, want a leg error", err)
	}
	if p, _ := r.Permission(id); p.State != message.PermissionPending {
		t.Fatalf("state %s, want pending", p.State)
	}
	leg.FailAnswers(nil)
	if _, err := r.AnswerPermission(context.Background(), id, message.PermissionAnswer{Behavior: message.BehaviorAllow}); err != nil {
		t.Fatalf("a retry after the leg recovered: %v", err)
	}
}

func TestALegSayingThePromptWasSettledElsewhereSettlesIt(t *testing.T) {
	leg := legtest.NewPromptLeg()
	leg.FailAnswers(&message.SettledError{State: message.PermissionAnswered, Behavior: message.BehaviorDeny, By: "cli on host b"})
	r := start(t, leg)
	id := feed(t, r, leg, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`))[0].Permission.ID
	_, _, sub := r.Hub().Subscribe(int64(r.Hub().LastID()))
	defer sub.Close()
	p, err := r.AnswerPermission(context.Background(), id, message.PermissionAnswer{Behavior: message.BehaviorAllow, By: "cli"})
	var se *message.SettledError
	if !errors.As(err, &se) || se.ID != id || se.By != "cli on host b" || err.Error() != "permission "+id+" was already answered (deny) by cli on host b" {
		t.Fatalf("err = %v, want the leg's settled error under this id", err)
	}
	if p.State != message.PermissionAnswered || p.Answer == nil || p.Answer.By != "cli on host b" || p.Answer.Behavior != message.BehaviorDeny {
		t.Fatalf("settled as %+v", p)
	}
	if ev := <-sub.C; ev.Type != message.EventPermission || ev.Permission.State != message.PermissionAnswered {
		t.Fatalf("published %+v", ev)
	}
	if _, err := r.AnswerPermission(context.Background(), id, message.PermissionAnswer{Behavior: message.BehaviorAllow}); !errors.Is(err, message.ErrPermissionSettled) {
		t.Fatalf("a second answer: %v", err)
	}
}

func TestALegThatSawThePromptSettledAtItsSessionSettlesItWithThatAnswer(t *testing.T) {
	leg := legtest.NewPromptLeg()
	leg.FailAnswers(&message.PromptSettledError{State: message.PermissionAnswered, Behavior: message.BehaviorDeny, By: "remote"})
	r := start(t, leg)
	id := feed(t, r, leg, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`))[0].Permission.ID
	p, err := r.AnswerPermission(context.Background(), id, message.PermissionAnswer{Behavior: message.BehaviorAllow, By: "cli"})
	var se *message.SettledError
	if !errors.As(err, &se) || se.ID != id || se.By != "remote" || se.Behavior != message.BehaviorDeny {
		t.Fatalf("err = %v, want a settled error naming the remote answer", err)
	}
	if p.State != message.PermissionAnswered || p.Answer == nil || p.Answer.By != "remote" || p.Answer.Behavior != message.BehaviorDeny {
		t.Fatalf("settled as %+v, want the remote deny, not our allow", p)
	}
}

func TestAPromptWithdrawnWhileItsAnswerIsOnItsWayStaysWithdrawn(t *testing.T) {
	leg := legtest.NewPromptLeg()
	leg.Gate, leg.Entered = make(chan struct{}), make(chan struct{}, 1)
	r := start(t, leg)
	id := feed(t, r, leg, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`))[0].Permission.ID
	errs := make(chan error, 1)
	go func() {
		_, err := r.AnswerPermission(context.Background(), id, message.PermissionAnswer{Behavior: message.BehaviorAllow})
		errs <- err
	}()
	<-leg.Entered
	feed(t, r, leg, legtest.Withdraw(legtest.SessionID, "r1"))
	close(leg.Gate)
	var se *message.SettledError
	if err := <-errs; !errors.As(err, &se) || se.State != message.PermissionCancelled {
		t.Fatalf("err = %v, want settled: withdrawn", err)
	}
	if p, _ := r.Permission(id); p.State != message.PermissionCancelled {
		t.Fatalf("state %s, want cancelled", p.State)
	}
}

func TestAnAnswerWaitingItsTurnGivesUpWithItsContext(t *testing.T) {
	leg := legtest.NewPromptLeg()
	leg.Gate, leg.Entered = make(chan struct{}), make(chan struct{}, 1)
	r := start(t, leg)
	id := feed(t, r, leg, legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`))[0].Permission.ID
	first := make(chan error, 1)
	go func() {
		_, err := r.AnswerPermission(context.Background(), id, message.PermissionAnswer{Behavior: message.BehaviorAllow})
		first <- err
	}()
	<-leg.Entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.AnswerPermission(ctx, id, message.PermissionAnswer{Behavior: message.BehaviorAllow}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the context's", err)
	}
	close(leg.Gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

func TestAnswerErrorsForUnknownIDsAndLegsThatCannotAnswer(t *testing.T) {
	t.Run("an unknown id is ErrNoPermission", func(t *testing.T) {
		r := start(t, legtest.NewPromptLeg())
		if _, err := r.AnswerPermission(context.Background(), "p000000", message.PermissionAnswer{Behavior: message.BehaviorAllow}); !errors.Is(err, message.ErrNoPermission) {
			t.Fatalf("err = %v", err)
		}
		if _, err := r.Permission("p000000"); !errors.Is(err, message.ErrNoPermission) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a prompt from a leg that cannot answer is a leg error", func(t *testing.T) {
		fake := newFake() // no Prompter
		r := start(t, fake)
		_, _, sub := r.Hub().Subscribe(-1)
		defer sub.Close()
		ev := legtest.Prompt(legtest.SessionID, "r1", "Bash", `{}`)
		ev.Leg, ev.Permission.Leg = fake.Name(), ""
		fake.Emit(t, ev)
		id := (<-sub.C).Permission.ID
		_, err := r.AnswerPermission(context.Background(), id, message.PermissionAnswer{Behavior: message.BehaviorAllow})
		if !errors.Is(err, message.ErrNotPrompter) {
			t.Fatalf("err = %v, want ErrNotPrompter", err)
		}
	})
}

func TestControlGoesToTheSessionsLeg(t *testing.T) {
	tests := []struct {
		name    string
		address string
		control message.Control
		legErr  error
		check   func(t *testing.T, err error)
	}{
		{"an interrupt by bridge address reaches the remote leg", "bridge:" + legtest.SessionID, message.Control{Kind: message.ControlInterrupt}, nil, nil},
		{"a mode change by name reaches the remote leg", "fix-the-bug", message.Control{Kind: message.ControlSetPermissionMode, Mode: "plan"}, nil, nil},
		{"a model change to the default is allowed", "fix-the-bug", message.Control{Kind: message.ControlSetModel}, nil, nil},
		{"a model the session offers may be named by its display name", "fix-the-bug", message.Control{Kind: message.ControlSetModel, Model: "Sonnet"}, nil, nil},
		{"a session of a leg without control requests is refused", "review", message.Control{Kind: message.ControlInterrupt}, nil, func(t *testing.T, err error) {
			if !errors.Is(err, message.ErrNotControllable) {
				t.Fatalf("err = %v, want ErrNotControllable", err)
			}
		}},
		{"a mode change without a mode is refused", "fix-the-bug", message.Control{Kind: message.ControlSetPermissionMode}, nil, func(t *testing.T, err error) {
			var ie *InvalidControlError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want an invalid control", err)
			}
		}},
		{"an unknown kind is refused", "fix-the-bug", message.Control{Kind: "reboot"}, nil, func(t *testing.T, err error) {
			var ie *InvalidControlError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want an invalid control", err)
			}
		}},
		{"an unknown name is not found", "fix-the-bugz", message.Control{Kind: message.ControlInterrupt}, nil, func(t *testing.T, err error) {
			var nf *addressing.NotFoundError
			if !errors.As(err, &nf) {
				t.Fatalf("err = %v, want not found", err)
			}
		}},
		{"a mode the protocol does not have is refused before anything is sent", "fix-the-bug", message.Control{Kind: message.ControlSetPermissionMode, Mode: "yolo"}, nil, func(t *testing.T, err error) {
			var ie *InvalidControlError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), "acceptEdits") {
				t.Fatalf("err = %v, want an invalid control naming the modes", err)
			}
		}},
		{"a model the session does not offer is refused before anything is sent", "fix-the-bug", message.Control{Kind: message.ControlSetModel, Model: "gpt-5"}, nil, func(t *testing.T, err error) {
			var ie *InvalidControlError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), "claude-opus-4-6") {
				t.Fatalf("err = %v, want an invalid control naming the offered models", err)
			}
		}},
		{"the session's error answer is a refusal", "fix-the-bug", message.Control{Kind: message.ControlInterrupt}, &message.ControlRefusedError{Kind: message.ControlInterrupt, Reason: "nothing to interrupt"}, func(t *testing.T, err error) {
			var re *RefusedError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), "nothing to interrupt") {
				t.Fatalf("err = %v, want a refusal carrying the session's error", err)
			}
		}},
		{"a leg failure is a leg error", "fix-the-bug", message.Control{Kind: message.ControlInterrupt}, errors.New("stream down"), func(t *testing.T, err error) {
			var le *LegError
			if !errors.As(err, &le) || le.Op != "control" {
				t.Fatalf("err = %v, want a leg error", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leg := legtest.NewPromptLeg()
			leg.FailControls(tt.legErr)
			leg.Models = []message.ModelInfo{{Value: "claude-opus-4-6"}, {Value: "claude-sonnet-4-5", DisplayName: "Sonnet"}}
			r := start(t, leg, newFake())
			_, err := r.Control(context.Background(), tt.address, tt.control)
			if tt.check != nil {
				tt.check(t, err)
				if ie := (*InvalidControlError)(nil); errors.As(err, &ie) && len(leg.Controls()) != 0 {
					t.Fatalf("an invalid control reached the leg: %+v", leg.Controls())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			controls, targets := leg.Controls(), leg.Targets()
			if len(controls) != 1 || controls[0] != tt.control || targets[0].SessionID != legtest.SessionID {
				t.Fatalf("leg got %+v for %+v", controls, targets)
			}
		})
	}
}

func TestAFullPendingListRefusesNewPrompts(t *testing.T) {
	leg := legtest.NewPromptLeg()
	r := start(t, leg)
	for i := 0; i < maxPendingPermissions; i += 100 {
		var evs []message.Event
		for j := i; j < min(i+100, maxPendingPermissions); j++ {
			evs = append(evs, legtest.Prompt(legtest.SessionID, fmt.Sprint(j), "Bash", `{}`))
		}
		feed(t, r, leg, evs...)
	}
	if pub := feed(t, r, leg, legtest.Prompt(legtest.SessionID, "one-too-many", "Bash", `{}`)); len(pub) != 0 {
		t.Fatalf("published %v beyond the cap", states(pub))
	}
	if n := len(r.Permissions()); n != maxPendingPermissions {
		t.Fatalf("%d pending, want the cap %d", n, maxPendingPermissions)
	}
	// Once one is settled there is room again.
	feed(t, r, leg, legtest.Withdraw(legtest.SessionID, "0"))
	if pub := feed(t, r, leg, legtest.Prompt(legtest.SessionID, "one-too-many", "Bash", `{}`)); len(pub) != 1 {
		t.Fatalf("published %v, want the prompt kept now", states(pub))
	}
}

func TestPendingPromptsAreCappedInBytesAndTheHistoryForgetsTheOldestPastItsBudget(t *testing.T) {
	leg := legtest.NewPromptLeg()
	r := start(t, leg)
	input := `{"command":"` + strings.Repeat("x", 1<<20) + `"}` // 1 MiB: far under the count
	var evs []message.Event
	for i := range maxPendingPromptBytes >> 20 {
		evs = append(evs, legtest.Prompt(legtest.SessionID, fmt.Sprint(i), "Bash", input))
	}
	kept := len(feed(t, r, leg, evs...))
	pending := r.Permissions()
	one := pending[0].Bytes()
	if kept != len(pending) || kept*one > maxPendingPromptBytes || (kept+1)*one <= maxPendingPromptBytes {
		t.Fatalf("%d prompts of %d bytes pending, want as many as %d bytes hold", len(pending), one, maxPendingPromptBytes)
	}
	if pub := feed(t, r, leg, legtest.Prompt(legtest.SessionID, "one-too-many", "Bash", input)); len(pub) != 0 {
		t.Fatalf("published %v past the budget", states(pub))
	}
	// Settled, they make room; the history keeps only its budget's worth,
	// the newest.
	evs = evs[:0]
	for i := range kept {
		evs = append(evs, legtest.Withdraw(legtest.SessionID, fmt.Sprint(i)))
	}
	feed(t, r, leg, evs...)
	if pub := feed(t, r, leg, legtest.Prompt(legtest.SessionID, "one-too-many", "Bash", input)); len(pub) != 1 {
		t.Fatalf("published %v, want the prompt kept now", states(pub))
	}
	var readable int
	for _, p := range pending {
		if _, err := r.Permission(p.ID); err == nil {
			readable++
		}
	}
	if readable*one > maxSettledPromptBytes || (readable+1)*one <= maxSettledPromptBytes {
		t.Errorf("%d settled prompts of %d bytes readable, want as many as %d bytes hold", readable, one, maxSettledPromptBytes)
	}
	if _, err := r.Permission(pending[len(pending)-1].ID); err != nil {
		t.Errorf("the newest settled prompt was forgotten: %v", err)
	}
	if _, err := r.Permission(pending[0].ID); !errors.Is(err, message.ErrNoPermission) {
		t.Errorf("the oldest settled prompt is still readable: %v", err)
	}
}
