package router

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// Bounds of the permission broker.
const (
	// keepSettledPermissions is how many answered or withdrawn prompts stay
	// readable (and keep a late repeat of them from coming back as new).
	keepSettledPermissions = 256
	// maxPendingPermissions caps the pending list. A prompt beyond it is
	// refused rather than pushing out one someone may be reading.
	maxPendingPermissions = 1024
	// maxPendingPromptBytes and maxSettledPromptBytes cap what the two
	// hold (PermissionRequest.Bytes; a tool input can be 8 MiB, so counts
	// alone allow gigabytes): past the first a prompt is refused, as past
	// the count; past the second the oldest settled ones are forgotten.
	maxPendingPromptBytes = 64 << 20
	maxSettledPromptBytes = 16 << 20
)

// AskUserQuestion is the tool whose prompts take Answers.
const AskUserQuestion = "AskUserQuestion"

var (
	// ErrNoPermission is returned for a permission id the router does not know.
	ErrNoPermission = errors.New("no permission prompt with that id")
	// ErrPermissionSettled is returned for a prompt already answered or
	// withdrawn; the error is a *SettledError saying which and by whom.
	ErrPermissionSettled = errors.New("the permission prompt is already settled")
)

// SettledError says how a prompt was settled. It matches ErrPermissionSettled.
type SettledError struct {
	ID       string
	State    message.PermissionState
	Behavior message.Behavior // the answer's verdict, when answered
	By       string           // who answered, when answered
}

func (e *SettledError) Error() string {
	if e.State == message.PermissionCancelled {
		return fmt.Sprintf("permission %s was withdrawn by the session", e.ID)
	}
	by := e.By
	if by == "" {
		by = "someone else"
	}
	return fmt.Sprintf("permission %s was already answered (%s) by %s", e.ID, e.Behavior, by)
}

// Is makes errors.Is(err, ErrPermissionSettled) true.
func (e *SettledError) Is(target error) bool { return target == ErrPermissionSettled }

// LegError is a leg's failure to carry an answer or a control request to
// its session. The prompt stays pending.
type LegError struct {
	Leg message.Protocol
	Op  string // "answer" or "control"
	Err error
}

func (e *LegError) Error() string { return fmt.Sprintf("%s leg: %s: %v", e.Leg, e.Op, e.Err) }
func (e *LegError) Unwrap() error { return e.Err }

// AnswerProblem says what is wrong with a permission answer.
type AnswerProblem uint8

const (
	AnswerBadBehavior          AnswerProblem = iota + 1 // behavior is neither allow nor deny
	AnswerDenyWithInput                                 // a deny carries updated input or answers
	AnswerInputNotObject                                // updated input is not a JSON object
	AnswerNotAQuestion                                  // answers to a prompt that is not AskUserQuestion
	AnswerUnknownQuestion                               // an answer names no question of the prompt
	AnswerMissingQuestion                               // a question of the prompt has no answer
	AnswerOneOption                                     // a single-select question needs exactly one option
	AnswerNoOption                                      // a multi-select question needs at least one option
	AnswerUnknownOption                                 // a label is not among the question's options
	AnswerRepeatedOption                                // a label is given twice
	AnswerBadRule                                       // a rule has an empty or malformed tool name
	AnswerBadDestination                                // the rule destination is not a settings scope
	AnswerQuestionNeedsAnswers                          // an allow of a question without answers
	AnswerBadSuggestion                                 // a suggestion number the prompt does not offer
	AnswerBadMode                                       // a mode switch to no permission mode
	AnswerDenyWithUpdates                               // a deny picks suggestions or switches the mode
)

var answerProblemWire = [...]string{
	AnswerBadBehavior: "bad-behavior", AnswerDenyWithInput: "deny-with-input",
	AnswerInputNotObject: "input-not-object", AnswerNotAQuestion: "not-a-question",
	AnswerUnknownQuestion: "unknown-question", AnswerMissingQuestion: "missing-question",
	AnswerOneOption: "one-option", AnswerNoOption: "no-option",
	AnswerUnknownOption: "unknown-option", AnswerRepeatedOption: "repeated-option",
	AnswerBadRule: "bad-rule", AnswerBadDestination: "bad-destination",
	AnswerQuestionNeedsAnswers: "question-needs-answers", AnswerBadSuggestion: "bad-suggestion",
	AnswerBadMode: "bad-mode", AnswerDenyWithUpdates: "deny-with-updates",
}

func (p AnswerProblem) String() string {
	return wireString(answerProblemWire[:], p, "answer-problem-%d")
}

// wireString is v's spelling in table, or unknown formatted with v's number
// when table has none.
func wireString[T ~uint8](table []string, v T, unknown string) string {
	if int(v) < len(table) && table[v] != "" {
		return table[v]
	}
	return fmt.Sprintf(unknown, uint8(v))
}

// InvalidAnswerError is an answer the prompt cannot take. Valid lists what
// would be accepted (question texts or option labels) when that helps.
type InvalidAnswerError struct {
	ID      string
	Problem AnswerProblem
	Detail  string
	Valid   []string
}

func (e *InvalidAnswerError) Error() string {
	s := fmt.Sprintf("invalid answer to permission %s: %s", e.ID, e.Detail)
	if len(e.Valid) > 0 {
		q := make([]string, len(e.Valid))
		for i, v := range e.Valid {
			q[i] = strconv.Quote(v)
		}
		s += " (valid: " + strings.Join(q, ", ") + ")"
	}
	return s
}

// InvalidControlError is a control request that cannot be sent.
type InvalidControlError struct{ Detail string }

func (e *InvalidControlError) Error() string { return "invalid control request: " + e.Detail }

// permBroker keeps one entry per (session, request id). Its zero value is
// ready to use.
type permBroker struct {
	mu      sync.Mutex
	byKey   map[permKey]*permEntry
	byID    map[string]*permEntry
	pending []*permEntry // arrival order
	settled []*permEntry // oldest first, at most keepSettledPermissions
	// pendingBytes and settledBytes are their entries' sizes' sums.
	pendingBytes, settledBytes int
}

type permKey struct{ session, request string }

type permEntry struct {
	key  permKey
	req  message.PermissionRequest
	size int // req.Bytes() when it was kept
	// turn holds a token while an answer is in flight, so a second answer
	// waits and then sees the first one's outcome: the leg is asked once.
	turn chan struct{}
}

// notePermission takes a leg's permission event, keeps the broker's entry
// current and returns the event to publish, restamped with the short id; false
// when there is nothing new to publish.
func (r *Router) notePermission(ev message.Event) (message.Event, bool) {
	p := ev.Permission
	if p == nil || p.SessionID == "" || p.RequestID == "" {
		r.log.Debug("permission event without a session or request id dropped")
		return ev, false
	}
	req := *p
	if req.Leg == "" {
		req.Leg = ev.Leg
	}
	if req.Host == "" {
		req.Host = r.cfg.Host
	}
	if req.Created.IsZero() {
		req.Created = r.cfg.Clock.Now()
	}
	req.Classify()
	if len(req.Suggestions) > message.MaxSuggestions {
		req.Suggestions = req.Suggestions[:message.MaxSuggestions]
	}
	var (
		out message.PermissionRequest
		ok  bool
	)
	switch req.State {
	case message.PermissionPending:
		var err error
		if out, ok, err = r.perms.add(req); err != nil {
			r.log.Warn("permission prompt not kept", "session_id", req.SessionID, "request_id", req.RequestID, "err", err)
		}
	case message.PermissionCancelled:
		out, ok = r.perms.cancel(permKey{req.SessionID, req.RequestID}, message.PermissionCancelled, nil)
	case message.PermissionAnswered:
		// Answered elsewhere (claude.ai, another client): the leg saw the
		// answer on the session's stream. The leg leaves out the echoes of
		// answers sent through the router, which settles those itself.
		a := message.PermissionAnswer{By: "remote"}
		if req.Answer != nil {
			a = *req.Answer
			if a.By == "" {
				a.By = "remote"
			}
		}
		out, ok = r.perms.cancel(permKey{req.SessionID, req.RequestID}, message.PermissionAnswered, &a)
	default:
		r.log.Debug("permission event in an unexpected state dropped", "state", req.State)
		return ev, false
	}
	if !ok {
		return ev, false
	}
	ev.Permission = &out
	return ev, true
}

// errTooManyPrompts refuses a prompt when the pending list is full.
var errTooManyPrompts = fmt.Errorf("%d prompts, or %d MiB of them, are already pending; answer some (it can still be answered on claude.ai)",
	maxPendingPermissions, maxPendingPromptBytes>>20)

// add keeps a new pending prompt; false, with no error, for one it already
// has.
func (b *permBroker) add(req message.PermissionRequest) (message.PermissionRequest, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byKey == nil {
		b.byKey, b.byID = map[permKey]*permEntry{}, map[string]*permEntry{}
	}
	k := permKey{req.SessionID, req.RequestID}
	e, seen := b.byKey[k]
	if seen && !(req.Leg == message.ProtocolFederation && e.req.State == message.PermissionCancelled) {
		// Raised again after a reconnect or replay, or already settled.
		return message.PermissionRequest{}, false, nil
	}
	size := req.Bytes()
	if len(b.pending) >= maxPendingPermissions || b.pendingBytes+size > maxPendingPromptBytes {
		return message.PermissionRequest{}, false, errTooManyPrompts
	}
	b.pendingBytes += size
	if seen {
		// Another host's prompt, withdrawn here when that host went
		// quiet, and listed pending by it again: its list is the truth.
		if i := slices.Index(b.settled, e); i >= 0 {
			b.settled = slices.Delete(b.settled, i, i+1)
			b.settledBytes -= e.size
		}
		req.ID, req.State, req.Answer = e.req.ID, message.PermissionPending, nil
		e.req, e.size = req, size
		b.pending = append(b.pending, e)
		return req, true, nil
	}
	req.ID = b.newID(k)
	req.State = message.PermissionPending
	req.Answer = nil
	e = &permEntry{key: k, req: req, size: size, turn: make(chan struct{}, 1)}
	b.byKey[k], b.byID[req.ID] = e, e
	b.pending = append(b.pending, e)
	return req, true, nil
}

// newID is "p" and 6 hex digits of the key's hash, more on a collision.
func (b *permBroker) newID(k permKey) string {
	sum := sha256.Sum256([]byte(k.session + "\x00" + k.request))
	h := hex.EncodeToString(sum[:])
	for n := 6; n <= len(h); n += 2 {
		if _, taken := b.byID["p"+h[:n]]; !taken {
			return "p" + h[:n]
		}
	}
	// Two keys with one sha256: not expected to happen, but never reuse an id.
	for i := 2; ; i++ {
		if id := fmt.Sprintf("p%s-%d", h, i); b.byID[id] == nil {
			return id
		}
	}
}

// cancel settles a pending prompt the leg says is over: withdrawn, or
// answered somewhere else.
func (b *permBroker) cancel(k permKey, st message.PermissionState, a *message.PermissionAnswer) (message.PermissionRequest, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.byKey[k]
	if !ok || e.req.State != message.PermissionPending {
		// Unknown (nothing to withdraw) or already settled: the first
		// settlement stands.
		return message.PermissionRequest{}, false
	}
	b.settleLocked(e, st, a)
	return e.req, true
}

// settleLocked moves a pending entry into the bounded history.
func (b *permBroker) settleLocked(e *permEntry, st message.PermissionState, a *message.PermissionAnswer) {
	e.req.State, e.req.Answer = st, a
	if i := slices.Index(b.pending, e); i >= 0 {
		b.pending = slices.Delete(b.pending, i, i+1)
		b.pendingBytes -= e.size
	}
	b.settled = append(b.settled, e)
	b.settledBytes += e.size
	for len(b.settled) > keepSettledPermissions || b.settledBytes > maxSettledPromptBytes && len(b.settled) > 1 {
		old := b.settled[0]
		b.settled = slices.Delete(b.settled, 0, 1)
		b.settledBytes -= old.size
		delete(b.byKey, old.key)
		delete(b.byID, old.req.ID)
	}
}

func (b *permBroker) get(id string) (*permEntry, message.PermissionRequest, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.byID[id]
	if !ok {
		return nil, message.PermissionRequest{}, fmt.Errorf("%w: %s", ErrNoPermission, id)
	}
	return e, e.req, nil
}

// CheckPending is nil for a pending prompt, else the *SettledError saying
// how it was settled.
func CheckPending(req message.PermissionRequest) error {
	if req.State == message.PermissionPending {
		return nil
	}
	se := &SettledError{ID: req.ID, State: req.State}
	if req.Answer != nil {
		se.Behavior, se.By = req.Answer.Behavior, req.Answer.By
	}
	return se
}

func sortByAge(es []*permEntry) []message.PermissionRequest {
	out := make([]message.PermissionRequest, len(es))
	for i, e := range es {
		out[i] = e.req
	}
	// Arrival order breaks ties: es is already in it.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

// Permissions lists the pending permission prompts, oldest first.
func (r *Router) Permissions() []message.PermissionRequest {
	r.perms.mu.Lock()
	defer r.perms.mu.Unlock()
	return sortByAge(r.perms.pending)
}

// SettledPermissions lists the most recently answered or withdrawn prompts,
// oldest first.
func (r *Router) SettledPermissions() []message.PermissionRequest {
	r.perms.mu.Lock()
	defer r.perms.mu.Unlock()
	return sortByAge(r.perms.settled)
}

// Permission returns a pending or recently settled prompt.
func (r *Router) Permission(id string) (message.PermissionRequest, error) {
	_, req, err := r.perms.get(id)
	return req, err
}

// AnswerPermission checks a against the prompt id, has the prompt's leg send
// it, and settles the prompt as answered once the leg says the server took
// it. The first answer wins: a later or concurrent one gets a *SettledError
// and never reaches the leg. A leg's failure (a *LegError) leaves the prompt
// pending.
func (r *Router) AnswerPermission(ctx context.Context, id string, a message.PermissionAnswer) (message.PermissionRequest, error) {
	e, req, err := r.perms.get(id)
	if err != nil {
		return message.PermissionRequest{}, err
	}
	if err := CheckPending(req); err != nil {
		return req, err
	}
	if err := ValidateAnswer(req, a); err != nil {
		return req, err
	}
	select {
	case e.turn <- struct{}{}:
	case <-ctx.Done():
		return req, ctx.Err()
	}
	defer func() { <-e.turn }()
	r.perms.mu.Lock()
	req = e.req // settled by the answer we waited for, or withdrawn meanwhile
	r.perms.mu.Unlock()
	if err := CheckPending(req); err != nil {
		return req, err
	}
	l, ok := r.Leg(req.Leg)
	p, isPrompter := l.(leg.Prompter)
	if !ok || !isPrompter {
		return req, &LegError{Leg: req.Leg, Op: "answer", Err: message.ErrNotPrompter}
	}
	a = cloneAnswer(a)
	if err := p.Answer(ctx, req, a); err != nil {
		if ps := (*message.PromptSettledError)(nil); errors.As(err, &ps) { // the leg saw it settled at its session first
			err = &SettledError{State: ps.State, Behavior: ps.Behavior, By: ps.By}
		}
		var se *SettledError
		if errors.As(err, &se) {
			return r.settledByLeg(e, *se)
		}
		return req, &LegError{Leg: req.Leg, Op: "answer", Err: err}
	}
	r.perms.mu.Lock()
	switch e.req.State {
	case message.PermissionPending:
	case message.PermissionAnswered:
		// The leg saw the server echo an answer while ours was on its way:
		// the server took one, and it holds the first it got. Ours was
		// accepted, so it is not an error, but the echo already settled it.
		req = e.req
		r.perms.mu.Unlock()
		return req, nil
	default:
		// Withdrawn by the session while the answer was on its way.
		req = e.req
		r.perms.mu.Unlock()
		return req, CheckPending(req)
	}
	r.perms.settleLocked(e, message.PermissionAnswered, &a)
	req = e.req
	r.perms.mu.Unlock()
	r.hub.Publish(message.Event{Type: message.EventPermission, Leg: req.Leg, Permission: &req})
	return req, nil
}

// settledByLeg settles e as the leg says it already was: a prompt of
// another host that an answer from elsewhere settled first. The answer we
// carried lost; the error says to whom.
func (r *Router) settledByLeg(e *permEntry, se SettledError) (message.PermissionRequest, error) {
	r.perms.mu.Lock()
	fresh := e.req.State == message.PermissionPending
	if fresh {
		var a *message.PermissionAnswer
		if se.State == message.PermissionAnswered {
			a = &message.PermissionAnswer{Behavior: se.Behavior, By: se.By}
		}
		r.perms.settleLocked(e, se.State, a)
	}
	req := e.req
	r.perms.mu.Unlock()
	if fresh {
		r.hub.Publish(message.Event{Type: message.EventPermission, Leg: req.Leg, Permission: &req})
	}
	se.ID = req.ID
	return req, &se
}

func cloneAnswer(a message.PermissionAnswer) message.PermissionAnswer {
	a.UpdatedInput = slices.Clone(a.UpdatedInput)
	a.Rules = slices.Clone(a.Rules)
	a.Suggestions = slices.Clone(a.Suggestions)
	if a.Answers != nil {
		m := make(map[string][]string, len(a.Answers))
		for k, v := range a.Answers {
			m[k] = slices.Clone(v)
		}
		a.Answers = m
	}
	return a
}

// ValidateAnswer checks a against req as AnswerPermission does, without
// asking anyone.
func ValidateAnswer(req message.PermissionRequest, a message.PermissionAnswer) error {
	bad := func(p AnswerProblem, valid []string, format string, args ...any) error {
		return &InvalidAnswerError{ID: req.ID, Problem: p, Detail: fmt.Sprintf(format, args...), Valid: valid}
	}
	switch a.Behavior {
	case message.BehaviorAllow:
	case message.BehaviorDeny:
		if len(a.UpdatedInput) > 0 || len(a.Answers) > 0 {
			return bad(AnswerDenyWithInput, nil, "a deny takes no updated input or answers, only a message")
		}
		if len(a.Suggestions) > 0 || a.Mode != "" {
			return bad(AnswerDenyWithUpdates, nil, "a deny takes no suggestions or mode switch, only a message (and rules)")
		}
	default:
		return bad(AnswerBadBehavior, []string{"allow", "deny"}, "behavior %q: want allow or deny", a.Behavior)
	}
	if len(a.UpdatedInput) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(a.UpdatedInput, &obj); err != nil || obj == nil {
			return bad(AnswerInputNotObject, nil, "updated input must be a JSON object")
		}
	}
	for _, rule := range a.Rules {
		if rule.ToolName == "" || strings.ContainsAny(rule.ToolName, "()") || strings.ContainsFunc(rule.ToolName, unicode.IsSpace) {
			return bad(AnswerBadRule, nil, "rule tool name %q: want a tool name such as Bash", rule.ToolName)
		}
	}
	if a.RuleDestination != "" && !slices.Contains(message.RuleDestinations, a.RuleDestination) {
		return bad(AnswerBadDestination, message.RuleDestinations, "rule destination %q is not a settings scope", a.RuleDestination)
	}
	for i, n := range a.Suggestions {
		if n < 1 || n > len(req.Suggestions) {
			return bad(AnswerBadSuggestion, suggestionList(req), "suggestion %d: %s", n, offered(req))
		}
		if slices.Contains(a.Suggestions[:i], n) {
			return bad(AnswerBadSuggestion, suggestionList(req), "suggestion %d is given twice", n)
		}
	}
	if a.Mode != "" && !message.ValidPermissionMode(a.Mode) {
		return bad(AnswerBadMode, message.PermissionModes, "mode %q is not a permission mode", a.Mode)
	}
	if len(a.Answers) > 0 {
		return validateAnswers(req, a.Answers, bad)
	}
	if a.Behavior == message.BehaviorAllow && message.KindOf(req.ToolName) == message.PromptQuestion && !hasAnswers(a.UpdatedInput) {
		return bad(AnswerQuestionNeedsAnswers, nil,
			"%s is a question: allow would send no answers; answer it (gateway answer %s \"QUESTION=OPTION\"...) or deny it", req.ID, req.ID)
	}
	return nil
}

// hasAnswers says whether an updated input carries AskUserQuestion answers
// of its own.
func hasAnswers(in json.RawMessage) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal(in, &obj) == nil && len(obj["answers"]) > 0 && string(obj["answers"]) != "null"
}

// suggestionList numbers req's suggestions as answers pick them.
func suggestionList(req message.PermissionRequest) []string {
	out := make([]string, len(req.Suggestions))
	for i, u := range req.Suggestions {
		out[i] = fmt.Sprintf("%d: %s", i+1, u)
	}
	return out
}

func offered(req message.PermissionRequest) string {
	if len(req.Suggestions) == 0 {
		return "the session offers no suggestions with this prompt"
	}
	return fmt.Sprintf("the session offers %d, numbered from 1", len(req.Suggestions))
}

func validateAnswers(req message.PermissionRequest, answers map[string][]string,
	bad func(AnswerProblem, []string, string, ...any) error) error {
	if req.ToolName != AskUserQuestion {
		return bad(AnswerNotAQuestion, nil, "answers are for %s prompts; this one is %s", AskUserQuestion, req.ToolName)
	}
	texts := make([]string, len(req.Questions))
	for i, q := range req.Questions {
		texts[i] = q.Question
	}
	for _, k := range slices.Sorted(maps.Keys(answers)) {
		if !slices.Contains(texts, k) {
			return bad(AnswerUnknownQuestion, texts, "no question %q", k)
		}
	}
	for _, q := range req.Questions {
		labels, ok := answers[q.Question]
		switch {
		case !ok:
			return bad(AnswerMissingQuestion, texts, "question %q has no answer; answer every question", q.Question)
		case !q.MultiSelect && len(labels) != 1:
			return bad(AnswerOneOption, q.Options, "question %q takes exactly one option, got %d", q.Question, len(labels))
		case len(labels) == 0:
			return bad(AnswerNoOption, q.Options, "question %q needs at least one option", q.Question)
		}
		for i, l := range labels {
			if !slices.Contains(q.Options, l) {
				return bad(AnswerUnknownOption, q.Options, "question %q has no option %q", q.Question, l)
			}
			if slices.Contains(labels[:i], l) {
				return bad(AnswerRepeatedOption, q.Options, "question %q: option %q is given twice", q.Question, l)
			}
		}
	}
	return nil
}
