package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sessiongateway/gateway/internal/jsonx"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/message"
)

// Bounds of the approver.
const (
	// approverQueue is how many notices may wait for the approver. Beyond
	// it a new notice is dropped and logged: the prompt it is about can
	// still be answered from the CLI, the API or claude.ai.
	approverQueue = 64
	// approverAttempts is how often a notice is tried before it is given
	// up (logged); approverBackoff is the wait after the first failure,
	// doubled after each further one.
	approverAttempts = 4
	approverBackoff  = time.Second
	// approverInputCap caps the tool input shown in a prompt notice, so one
	// huge Write does not flood the approver's context.
	approverInputCap = 2000
	// approverPendingShown caps the pending prompts a help text lists.
	approverPendingShown = 10
	// approverAnswerTimeout bounds how long a reply waits for the leg to
	// carry its answer, so a stuck leg does not hold a background slot.
	approverAnswerTimeout = 30 * time.Second
)

// approver sends each new permission prompt to Config.Approver as a message
// from the gateway, and answers the prompts its replies name. Its notices go
// out one at a time, in order, from one goroutine the router's background
// pool owns; its replies are handled in that pool too, so the router's event
// pump never waits on a send or an answer.
type approver struct {
	r    *Router
	addr string // as configured

	mu       sync.Mutex
	who      message.Session                // what addr resolved to last
	queue    []func(context.Context) string // notices waiting, oldest first, rendered when sent
	draining bool                           // a drain goroutine owns the queue
}

func newApprover(r *Router, addr string) *approver { return &approver{r: r, addr: addr} }

// isApprover says whether by (a PermissionAnswer's By) is the approver.
func (a *approver) isApprover(by string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return by != "" && (by == a.who.Address || by == a.addr)
}

// permission takes a prompt event the broker just stamped: a new pending
// prompt is sent whole, a withdrawn or elsewhere-answered one announced.
func (a *approver) permission(ctx context.Context, p message.PermissionRequest) {
	switch p.State {
	case message.PermissionPending:
		a.enqueue(ctx, func(ctx context.Context) string { return a.promptText(ctx, p) })
	case message.PermissionCancelled, message.PermissionAnswered:
		a.enqueue(ctx, func(context.Context) string { return settledText(p) })
	}
}

// inbound looks at a message that arrived for the gateway itself. One whose
// first line starts with a reply verb is checked in the background: from the
// approver, it is a reply; from anyone else, it is left alone.
func (a *approver) inbound(ctx context.Context, m message.Message) {
	if _, ok := replyVerbOf(m.Body); !ok {
		return
	}
	a.r.background(func() { a.reply(ctx, m) }, func() {
		a.r.log.Warn("approver reply not handled: the gateway is busy", "msg_id", m.ID, "from", m.From)
	})
}

// reply answers the prompt an approver's reply names and tells the approver
// how that went.
func (a *approver) reply(ctx context.Context, m message.Message) {
	who, ok := a.from(ctx, m)
	if !ok {
		a.r.log.Debug("reply to a permission prompt from someone other than the approver ignored", "msg_id", m.ID, "from", m.From)
		return
	}
	rep, err := ParseReply(m.Body)
	if err != nil {
		a.r.log.Info("approver reply not understood", "msg_id", m.ID, "err", err)
		a.enqueue(ctx, func(context.Context) string { return a.helpText(m.Body, err) })
		return
	}
	by := who.Address
	if by == "" {
		by = m.From
	}
	text := a.apply(ctx, rep, by)
	if ctx.Err() != nil {
		return
	}
	a.r.log.Info("approver replied", "permission", rep.ID, "verb", rep.Verb.String(), "by", by)
	a.enqueue(ctx, func(context.Context) string { return text })
}

// apply carries out rep and says what came of it, for the approver.
func (a *approver) apply(ctx context.Context, rep Reply, by string) string {
	p, err := a.r.Permission(rep.ID)
	if err != nil {
		return a.unknownText(rep.ID)
	}
	if err := settledErr(p); err != nil {
		return "Not applied: " + err.Error() + "."
	}
	ans := message.PermissionAnswer{Behavior: message.BehaviorAllow, By: by}
	switch rep.Verb {
	case VerbDeny:
		ans.Behavior, ans.Message = message.BehaviorDeny, rep.Reason
	case VerbAnswer:
		if len(p.Questions) == 0 {
			return fmt.Sprintf("Not applied: %s is a %s request, not a question.\n%s", p.ID, oneLineCap(p.ToolName, 100), replyForms(p))
		}
		answers, err := ParseAnswers(p.Questions, rep.Specs)
		if err != nil {
			return fmt.Sprintf("Not applied: %v\n%s", err, replyForms(p))
		}
		ans.Answers = answers
	}
	actx, cancel := context.WithTimeout(ctx, approverAnswerTimeout)
	defer cancel()
	got, err := a.r.AnswerPermission(actx, rep.ID, ans)
	var (
		ie *InvalidAnswerError
		le *LegError
	)
	switch {
	case err == nil:
		return doneText(got, ans)
	case errors.Is(err, ErrPermissionSettled):
		return "Not applied: " + err.Error() + "."
	case errors.Is(err, ErrNoPermission):
		return a.unknownText(rep.ID)
	case errors.As(err, &ie):
		return fmt.Sprintf("Not applied: %v.\n%s", err, replyForms(p))
	case errors.As(err, &le):
		return fmt.Sprintf("Not applied: the answer could not be delivered to the session (%v). %s is still pending; reply again to retry.", le.Err, p.ID)
	default:
		return fmt.Sprintf("Not applied: %v. %s is still pending.", err, p.ID)
	}
}

// from reports whether m comes from the approver, and which session that
// is. The address is resolved when first needed and again, from a fresh
// listing, whenever a message does not match: a restarted approver has a
// new socket and session id.
func (a *approver) from(ctx context.Context, m message.Message) (message.Session, bool) {
	a.mu.Lock()
	who := a.who
	a.mu.Unlock()
	if a.matches(who, m) {
		return who, true
	}
	addr, err := addressing.Parse(a.addr)
	if err != nil {
		return message.Session{}, false
	}
	_, who, _, err = a.r.resolveIn(ctx, addr, a.r.Sessions(ctx))
	if err != nil {
		a.r.log.Debug("approver address does not resolve", "approver", a.addr, "err", err)
		return message.Session{}, false
	}
	a.mu.Lock()
	a.who = who
	a.mu.Unlock()
	return who, a.matches(who, m)
}

// matches compares m's sender with the approver's session: its address,
// else the session id the sender claims.
func (a *approver) matches(who message.Session, m message.Message) bool {
	if from := canonicalAddress(m.From); from != "" {
		if from == canonicalAddress(a.addr) || from == canonicalAddress(who.Address) {
			return true
		}
	}
	return m.FromSession != "" && m.FromSession == who.SessionID
}

// canonicalAddress prints an address the way addressing does, so
// "uds:/x.sock" and "/x.sock" compare equal.
func canonicalAddress(s string) string {
	if s == "" {
		return ""
	}
	if a, err := addressing.Parse(s); err == nil {
		return a.String()
	}
	return s
}

// enqueue adds a notice, rendered when its turn comes, and starts a drain
// goroutine when none runs. A full queue drops the new notice.
func (a *approver) enqueue(ctx context.Context, render func(context.Context) string) {
	a.mu.Lock()
	if len(a.queue) >= approverQueue {
		a.mu.Unlock()
		a.r.log.Warn("approver notice dropped: too many are waiting", "approver", a.addr, "waiting", approverQueue)
		return
	}
	a.queue = append(a.queue, render)
	if a.draining {
		a.mu.Unlock()
		return
	}
	a.draining = true
	a.mu.Unlock()
	a.r.background(func() { a.drain(ctx) }, func() {
		// The notice stays queued; the next one tries again.
		a.mu.Lock()
		a.draining = false
		a.mu.Unlock()
		a.r.log.Warn("approver notices wait: the gateway is busy", "approver", a.addr)
	})
}

// drain sends the queued notices in order until the queue is empty or ctx
// ends.
func (a *approver) drain(ctx context.Context) {
	for {
		a.mu.Lock()
		if len(a.queue) == 0 || ctx.Err() != nil {
			a.draining = false
			a.mu.Unlock()
			return
		}
		render := a.queue[0]
		a.queue[0] = nil
		a.queue = a.queue[1:]
		a.mu.Unlock()
		a.deliver(ctx, render(ctx))
	}
}

// deliver sends body to the approver, retrying a failed send a few times
// with a growing wait, then giving it up.
func (a *approver) deliver(ctx context.Context, body string) {
	wait := approverBackoff
	for attempt := 1; ; attempt++ {
		err := a.send(ctx, body)
		if err == nil || ctx.Err() != nil {
			return
		}
		if attempt == approverAttempts {
			a.r.log.Warn("approver notice given up", "approver", a.addr, "attempts", attempt, "err", err)
			return
		}
		a.r.log.Info("approver notice failed; retrying", "approver", a.addr, "attempt", attempt, "retry_in", wait, "err", err)
		if !a.wait(ctx, wait) {
			return
		}
		wait *= 2
	}
}

// send is one attempt: resolving the approver again each time, so a
// restarted approver is found.
func (a *approver) send(ctx context.Context, body string) error {
	out, err := a.r.Send(ctx, SendRequest{To: a.addr, Body: strings.TrimSpace(body)})
	if err != nil {
		return err
	}
	switch out.Status {
	case message.StatusFailed, message.StatusDropped:
		reason := out.Status.String()
		if n := len(out.Receipts); n > 0 && out.Receipts[n-1].Reason != "" {
			reason += ": " + out.Receipts[n-1].Reason
		}
		return errors.New(reason)
	}
	return nil
}

// wait sleeps d on the router's clock; false when ctx ended first.
func (a *approver) wait(ctx context.Context, d time.Duration) bool {
	done := make(chan struct{})
	t := a.r.cfg.Clock.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return true
	case <-ctx.Done():
		t.Stop()
		return false
	}
}

// The texts below are read by people and by models: each says what
// happened in its first sentence and gives the exact reply forms.

// promptText is the notice of a new prompt: who asks, for what, and how to
// answer.
func (a *approver) promptText(ctx context.Context, p message.PermissionRequest) string {
	var b strings.Builder
	from := a.sessionLabel(ctx, p)
	if len(p.Questions) > 0 {
		fmt.Fprintf(&b, "Question %s from %s, asked with %s:\n", p.ID, from, oneLineCap(p.ToolName, 100))
		for i, q := range p.Questions {
			fmt.Fprintf(&b, "  %d. %s", i+1, oneLineCap(q.Question, 300))
			if q.Header != "" {
				fmt.Fprintf(&b, " [%s]", oneLineCap(q.Header, 60))
			}
			if q.MultiSelect {
				b.WriteString(" (choose one or more)\n")
			} else {
				b.WriteString(" (choose one)\n")
			}
			for j, o := range q.Options {
				fmt.Fprintf(&b, "       %d) %s\n", j+1, oneLineCap(o, 200))
			}
		}
	} else {
		fmt.Fprintf(&b, "Permission request %s from %s: the tool %s wants to run.\n", p.ID, from, oneLineCap(p.ToolName, 100))
		if d := oneLineCap(p.Description, 300); d != "" {
			fmt.Fprintf(&b, "Description: %s\n", d)
		}
		fmt.Fprintf(&b, "Input:\n%s\n", prettyInput(p.Input))
	}
	b.WriteString("\n")
	b.WriteString(replyForms(p))
	b.WriteString("The first answer wins: the request may also be answered with `gateway allow`, `gateway deny` or on claude.ai.")
	return b.String()
}

// sessionLabel names the prompt's session: its name when a roster knows
// it, and its address.
func (a *approver) sessionLabel(ctx context.Context, p message.PermissionRequest) string {
	kind := "session"
	if p.Leg == message.ProtocolRemote {
		kind = "remote session"
	}
	addr := p.Address
	if addr == "" {
		addr = p.SessionID
	}
	if _, s, err := a.r.Resolve(ctx, addr); err == nil && s.Name != "" {
		return fmt.Sprintf("%s %q (%s)", kind, oneLineCap(s.Name, 100), addr)
	}
	return kind + " " + addr
}

// replyForms gives the exact replies a prompt takes, with an example that
// parses.
func replyForms(p message.PermissionRequest) string {
	var b strings.Builder
	b.WriteString("Reply to this message with one line, one of:\n")
	if len(p.Questions) == 0 {
		fmt.Fprintf(&b, "  allow %s\n  deny %s <reason>\n", p.ID, p.ID)
		b.WriteString("The reason is told to the session's model.\n")
		return b.String()
	}
	names := questionNames(p.Questions)
	ex, byNumber := make([]string, len(p.Questions)), make([]string, len(p.Questions))
	raw := make([]string, len(p.Questions))
	for i, q := range p.Questions {
		opt := "1"
		if len(q.Options) > 0 {
			opt = q.Options[0]
		}
		raw[i] = names[i] + "=" + opt
		ex[i], byNumber[i] = quoteSpec(raw[i]), quoteSpec(fmt.Sprintf("%d=1", i+1))
	}
	if _, err := ParseAnswers(p.Questions, raw); err != nil {
		ex = byNumber // labels that do not read back (odd spacing, "=" in a header): numbers do
	}
	fmt.Fprintf(&b, "  answer %s %s\n  deny %s <reason>\n", p.ID, strings.Join(ex, " "), p.ID)
	fmt.Fprintf(&b, "Name a question by its number, header or text, and an option by its number or label (answer %s %s works too); answer every question.",
		p.ID, strings.Join(byNumber, " "))
	for i, q := range p.Questions {
		if q.MultiSelect && len(q.Options) >= 2 {
			list := jsonList(q.Options[:2])
			fmt.Fprintf(&b, " A question marked \"choose one or more\" takes several options: repeat it (%s %s) or give a list: %s=%s.",
				quoteSpec(names[i]+"="+q.Options[0]), quoteSpec(names[i]+"="+q.Options[1]), shellWord(names[i]), list)
			break
		}
	}
	b.WriteString("\n")
	return b.String()
}

// questionNames names each question the shortest way that reads back: its
// header when that names it alone, else its number.
func questionNames(qs []message.Question) []string {
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = fmt.Sprint(i + 1)
		if h := q.Header; h != "" && !strings.Contains(h, "=") {
			if j, err := pickQuestion(qs, strings.TrimSpace(h)); err == nil && j == i {
				names[i] = h
			}
		}
	}
	return names
}

// jsonList prints labels as a JSON list, leaving <, > and & as they are.
func jsonList(labels []string) string {
	b, _ := jsonx.Marshal(labels)
	return string(b)
}

// quoteSpec double-quotes s for a reply, escaping only what the reply's
// tokenizer unescapes.
func quoteSpec(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// shellWord is s bare when it needs no quotes, else quoted.
func shellWord(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("-_.?/:@%+,", r)
	}) {
		return quoteSpec(s)
	}
	return s
}

// settledText announces a prompt that no longer needs an answer.
func settledText(p message.PermissionRequest) string {
	if p.State == message.PermissionCancelled {
		return fmt.Sprintf("Permission request %s (%s) was withdrawn by the session: nothing to answer.", p.ID, promptSummary(p))
	}
	by, verdict := "someone else", "answered"
	if p.Answer != nil {
		if p.Answer.By != "" {
			by = p.Answer.By
		}
		if by == "remote" {
			by = "another client of the session (claude.ai)"
		}
		verdict = fmt.Sprintf("answered (%s)", p.Answer.Behavior)
	}
	return fmt.Sprintf("Permission request %s (%s) was %s by %s: nothing left to answer.", p.ID, promptSummary(p), verdict, by)
}

// doneText confirms an answer the session's server took.
func doneText(p message.PermissionRequest, a message.PermissionAnswer) string {
	switch {
	case a.Behavior == message.BehaviorDeny && a.Message != "":
		return fmt.Sprintf("Denied %s (%s). The session's model is told: %s", p.ID, promptSummary(p), oneLineCap(a.Message, 300))
	case a.Behavior == message.BehaviorDeny:
		return fmt.Sprintf("Denied %s (%s).", p.ID, promptSummary(p))
	case len(a.Answers) > 0:
		parts := make([]string, 0, len(p.Questions))
		for _, q := range p.Questions {
			parts = append(parts, oneLineCap(q.Question, 100)+" = "+oneLineCap(strings.Join(a.Answers[q.Question], ", "), 200))
		}
		return fmt.Sprintf("Answered %s: %s.", p.ID, strings.Join(parts, "; "))
	}
	return fmt.Sprintf("Allowed %s (%s).", p.ID, promptSummary(p))
}

// unknownText answers a reply naming no prompt the gateway knows.
func (a *approver) unknownText(id string) string {
	return fmt.Sprintf("Not applied: there is no permission request %s.\n%s%s", id, genericForms, a.pendingText())
}

// helpText answers a reply that starts with a verb but does not parse.
func (a *approver) helpText(body string, err error) string {
	return fmt.Sprintf("The gateway could not read your reply %q: %v.\n%s%s", oneLineCap(replyLine(body), 200), err, genericForms, a.pendingText())
}

const genericForms = "Reply with one line, one of:\n" +
	"  allow <id>\n" +
	"  deny <id> <reason>\n" +
	"  answer <id> \"Question=Option\" ...   (for questions; options by number or label)\n"

// pendingText lists the pending prompts, so a reply can name the right id.
func (a *approver) pendingText() string {
	ps := a.r.Permissions()
	if len(ps) == 0 {
		return "No request is pending."
	}
	var b strings.Builder
	b.WriteString("Pending:")
	for i, p := range ps {
		if i == approverPendingShown {
			fmt.Fprintf(&b, "\n  and %d more (gateway permissions lists them all)", len(ps)-i)
			break
		}
		fmt.Fprintf(&b, "\n  %s  %s", p.ID, promptSummary(p))
	}
	return b.String()
}

// promptSummary is the tool and what it is about, on one short line.
func promptSummary(p message.PermissionRequest) string {
	var about string
	if len(p.Questions) > 0 {
		qs := make([]string, len(p.Questions))
		for i, q := range p.Questions {
			qs[i] = q.Question
		}
		about = strings.Join(qs, " / ")
	}
	if about == "" {
		var in map[string]any
		_ = json.Unmarshal(p.Input, &in)
		for _, k := range []string{"command", "file_path", "notebook_path", "url", "query", "pattern", "plan"} {
			if v, ok := in[k].(string); ok && v != "" {
				about = v
				break
			}
		}
	}
	if about == "" {
		about = p.Description
	}
	tool := oneLineCap(p.ToolName, 60)
	if about = oneLineCap(about, 80); about == "" {
		return tool
	}
	return tool + ": " + about
}

// prettyInput is a tool input as indented JSON, cut to approverInputCap.
func prettyInput(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "(none)"
	}
	var b bytes.Buffer
	s := string(raw)
	if json.Indent(&b, raw, "", "  ") == nil {
		s = b.String()
	}
	if len(s) <= approverInputCap {
		return s
	}
	cut := approverInputCap
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s\n… (cut: %d of %d bytes shown; `gateway permissions --json` shows it whole)", s[:cut], cut, len(s))
}

// oneLineCap folds whitespace runs (newlines included) into single spaces
// and cuts s to at most width runes: text from a session cannot fake a line
// of the notice.
func oneLineCap(s string, width int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}

// ReplyVerb is what an approver's reply does to a prompt.
type ReplyVerb uint8

const (
	VerbAllow  ReplyVerb = iota + 1 // allow <id>
	VerbDeny                        // deny <id> [reason]
	VerbAnswer                      // answer <id> "Question=Option"...
)

var replyVerbWire = [...]string{VerbAllow: "allow", VerbDeny: "deny", VerbAnswer: "answer"}

func (v ReplyVerb) String() string { return wireString(replyVerbWire[:], v, "verb(%d)") }

// ReplyProblem says what is wrong with a reply that starts with a verb.
type ReplyProblem uint8

const (
	ReplyNoID       ReplyProblem = iota + 1 // nothing after the verb
	ReplyBadID                              // the id has characters no id has
	ReplyExtraWords                         // allow takes nothing after the id
	ReplyNoAnswers                          // answer names no Question=Option
	ReplyUnclosed                           // a quote or a [ list is not closed
)

var replyProblemWire = [...]string{
	ReplyNoID: "no-id", ReplyBadID: "bad-id", ReplyExtraWords: "extra-words",
	ReplyNoAnswers: "no-answers", ReplyUnclosed: "unclosed",
}

func (p ReplyProblem) String() string {
	return wireString(replyProblemWire[:], p, "reply-problem-%d")
}

// wireString is v's spelling in table, or unknown formatted with v's number
// when table has none.
func wireString[T ~uint8](table []string, v T, unknown string) string {
	if int(v) < len(table) && table[v] != "" {
		return table[v]
	}
	return fmt.Sprintf(unknown, uint8(v))
}

// ReplyError is a reply that starts with a verb but does not parse.
type ReplyError struct {
	Verb    ReplyVerb
	Problem ReplyProblem
	Detail  string
}

func (e *ReplyError) Error() string { return e.Detail }

// ErrNotAReply means a message's first line does not start with a verb: it
// is a message, not a reply to a prompt.
var ErrNotAReply = errors.New("the first line does not start with allow, deny or answer")

// Reply is an approver's reply to a permission prompt.
type Reply struct {
	Verb   ReplyVerb
	ID     string   // the prompt's short id, in lower case
	Reason string   // deny: told to the session's model; may be empty
	Specs  []string // answer: "Question=Option" specs, as ParseAnswers reads them
}

// String writes the reply the way ParseReply reads it.
func (r Reply) String() string {
	s := r.Verb.String() + " " + r.ID
	switch r.Verb {
	case VerbDeny:
		if r.Reason != "" {
			s += " " + r.Reason
		}
	case VerbAnswer:
		for _, sp := range r.Specs {
			s += " " + quoteSpec(sp)
		}
	}
	return s
}

// ParseReply reads the first line of body that says anything (blank lines
// and code fences skipped) as `allow ID`, `deny ID [reason]` or `answer ID
// SPEC...`. It tolerates what people and models wrap commands in: the line
// in quotes or backticks, a leading "/", a verb in any case or followed by
// ":", an id in <> or followed by punctuation. Answer specs are split like a
// shell's words ("..." with \" and \\, '...', “...”, \x), and a [ list ] is
// kept whole with its quotes, so Q=["A","B"] needs no more quoting. A first
// line without a verb is ErrNotAReply; one with a verb that does not parse
// is a *ReplyError.
func ParseReply(body string) (Reply, error) {
	verb, rest, ok := splitVerb(replyLine(body))
	if !ok {
		return Reply{}, ErrNotAReply
	}
	bad := func(p ReplyProblem, format string, args ...any) (Reply, error) {
		return Reply{}, &ReplyError{Verb: verb, Problem: p, Detail: fmt.Sprintf(format, args...)}
	}
	tok, rest, found, err := nextWord(rest)
	switch {
	case err != nil:
		return bad(ReplyUnclosed, "%v", err)
	case !found:
		return bad(ReplyNoID, "%s needs the request's id, such as %s p1a2b3c", verb, verb)
	}
	id := strings.ToLower(strings.Trim(tok, "<>.,;:!"))
	if !validReplyID(id) {
		return bad(ReplyBadID, "%q is not a request id; ids look like p1a2b3c", tok)
	}
	rep := Reply{Verb: verb, ID: id}
	switch verb {
	case VerbAllow:
		if extra := strings.TrimSpace(rest); extra != "" {
			return bad(ReplyExtraWords, "allow takes the id alone, but %q follows it", extra)
		}
	case VerbDeny:
		rep.Reason = unquoteReason(rest)
	case VerbAnswer:
		for {
			var spec string
			spec, rest, found, err = nextWord(rest)
			if err != nil {
				return bad(ReplyUnclosed, "%v", err)
			}
			if !found {
				break
			}
			rep.Specs = append(rep.Specs, spec)
		}
		if len(rep.Specs) == 0 {
			return bad(ReplyNoAnswers, `answer needs "Question=Option" after the id, such as answer %s "1=1"`, id)
		}
	}
	return rep, nil
}

// replyVerbOf is the cheap first look: does body start with a verb?
func replyVerbOf(body string) (ReplyVerb, bool) {
	v, _, ok := splitVerb(replyLine(body))
	return v, ok
}

// replyLine is the first line of body that says anything, unwrapped from
// quotes or backticks and a leading "/".
func replyLine(body string) string {
	for line := range strings.Lines(body) {
		l := strings.TrimSpace(line)
		if l == "" || strings.HasPrefix(l, "```") {
			continue
		}
		for len(l) >= 2 && strings.IndexByte("\"'`", l[0]) >= 0 && l[len(l)-1] == l[0] {
			l = strings.TrimSpace(l[1 : len(l)-1])
		}
		return strings.TrimPrefix(l, "/")
	}
	return ""
}

// splitVerb reads the verb word of line and returns what follows it.
func splitVerb(line string) (ReplyVerb, string, bool) {
	word, rest := line, ""
	if i := strings.IndexFunc(line, unicode.IsSpace); i >= 0 {
		word, rest = line[:i], line[i:]
	}
	word = strings.TrimSuffix(word, ":")
	for v, w := range replyVerbWire {
		if w != "" && strings.EqualFold(word, w) {
			return ReplyVerb(v), rest, true
		}
	}
	return 0, "", false
}

// validReplyID accepts what the broker's ids are made of.
func validReplyID(id string) bool {
	if id == "" || len(id) > 64 || id[0] == '-' {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// unquoteReason trims a deny reason and takes off quotes around all of it.
func unquoteReason(s string) string {
	s = strings.TrimSpace(s)
	for len(s) >= 2 && strings.IndexByte("\"'`", s[0]) >= 0 && s[len(s)-1] == s[0] &&
		strings.IndexByte(s[1:len(s)-1], s[0]) < 0 {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	return s
}

// nextWord reads one shell-like word from s: found is false when only
// space is left.
func nextWord(s string) (word, rest string, found bool, err error) {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	if s == "" {
		return "", "", false, nil
	}
	var b strings.Builder
	i := 0
	for i < len(s) {
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsSpace(c):
			return b.String(), s[i:], true, nil
		case c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' && j+1 < len(s) && (s[j+1] == '"' || s[j+1] == '\\') {
					j++
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return "", "", false, errors.New(`a "quote" is not closed`)
			}
			i = j + 1
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return "", "", false, errors.New(`a 'quote' is not closed`)
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 2
		case c == '“':
			j := strings.Index(s[i+size:], "”")
			if j < 0 {
				return "", "", false, errors.New(`a “quote” is not closed`)
			}
			b.WriteString(s[i+size : i+size+j])
			i += size + j + len("”")
		case c == '\\' && i+1 < len(s):
			_, n := utf8.DecodeRuneInString(s[i+1:])
			b.WriteString(s[i+1 : i+1+n])
			i += 1 + n
		case c == '[':
			n, ok := jsonListEnd(s[i:])
			if !ok {
				return "", "", false, errors.New("a [ list ] is not closed")
			}
			b.WriteString(s[i : i+n])
			i += n
		default:
			b.WriteString(s[i : i+size])
			i += size
		}
	}
	return b.String(), "", true, nil
}

// jsonListEnd finds the ] that closes the [ s starts with, skipping
// brackets inside JSON strings.
func jsonListEnd(s string) (int, bool) {
	depth, inString := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[':
			depth++
		case ']':
			if depth--; depth == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}
