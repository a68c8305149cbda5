package approver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/message/answerfmt"
	"github.com/sessiongateway/gateway/router"
)

// Bounds of the approver.
const (
	// maxQueued is how many notices may wait for the approver. Beyond
	// it a new notice is dropped and logged: the prompt it is about can
	// still be answered from the CLI, the API or claude.ai.
	maxQueued = 64
	// sendAttempts is how often a notice is tried before it is given
	// up (logged); noticeBackoff spaces the tries.
	sendAttempts = 4
	// inputCap caps the tool input shown in a prompt notice, so one
	// huge Write does not flood the approver's context.
	inputCap = 2000
	// pendingShown caps the pending prompts a help text lists.
	pendingShown = 10
	// answerTimeout bounds how long a reply waits for the leg to
	// carry its answer, so a stuck leg does not hold a background slot.
	answerTimeout = 30 * time.Second
	// maxWorkers bounds the replies being applied at once (as many as
	// the router's own background pool, which it shared while it lived
	// there). The one drain goroutine comes on top.
	maxWorkers = 32
)

// noticeBackoff waits 1 s after the first failed try of a notice, doubled
// after each further one, until sendAttempts tries have failed.
var noticeBackoff = clock.Backoff{Initial: time.Second, MaxRetries: sendAttempts - 1}

// Config sets up an Approver. Zero values take the defaults.
type Config struct {
	// Address is the session (a local session or alias, as `gateway send`
	// takes it) that gets each new permission prompt as a message and
	// answers it by replying allow, deny or answer.
	Address string
	Logger  *slog.Logger
	Clock   clock.Clock // nil for the wall clock
}

// Approver sends each new permission prompt to Config.Address as a message
// from the gateway, and answers the prompts its replies name. It follows
// the router's events and acts only through the router's public methods.
// Its notices go out one at a time, in order, from one goroutine it owns;
// its replies are handled by goroutines it owns too, so reading the events
// never waits on a send or an answer.
type Approver struct {
	r     *router.Router
	addr  string // as configured
	log   *slog.Logger
	clock clock.Clock
	since int64 // the hub's last event id when built: Run starts after it

	bg    sync.WaitGroup // the drain and replies in flight
	slots chan struct{}  // bounds the replies

	mu       sync.Mutex
	who      message.Session                // what addr resolved to last
	queue    []func(context.Context) string // notices waiting, oldest first, rendered when sent
	draining bool                           // a drain goroutine owns the queue
}

// New builds the approver for r. The events r publishes from now on are
// the ones Run handles, so build it before running the router.
func New(r *router.Router, cfg Config) *Approver {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Approver{r: r, addr: cfg.Address, log: cfg.Logger, clock: clock.Or(cfg.Clock),
		since: int64(r.Hub().LastID()), slots: make(chan struct{}, maxWorkers)}
}

// Run follows the router's events until ctx ends, then waits for the
// notices and replies under way to give up. A subscription cut off for
// falling behind is taken up again where it stopped; one ended by the
// gateway shutting down leaves Run waiting for ctx.
func (a *Approver) Run(ctx context.Context) error {
	defer a.bg.Wait()
	last := a.since
	for {
		replay, gap, sub := a.r.Hub().Subscribe(last)
		if gap {
			a.log.Warn("approver missed events: prompts raised meanwhile are not sent to it", "approver", a.addr)
		}
		for _, ev := range replay {
			last = int64(ev.ID)
			a.handle(ctx, ev)
		}
		err := a.follow(ctx, sub, &last)
		sub.Close()
		if !errors.Is(err, router.ErrSlowWatcher) {
			<-ctx.Done()
			return nil
		}
		a.log.Warn("approver fell behind the gateway's events; catching up", "approver", a.addr)
	}
}

// follow handles sub's events until ctx ends (nil) or sub does (why).
func (a *Approver) follow(ctx context.Context, sub *router.Sub, last *int64) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-sub.C:
			if !ok {
				return sub.Err()
			}
			*last = int64(ev.ID)
			a.handle(ctx, ev)
		}
	}
}

// handle takes one router event: a prompt the broker stamped, or a message
// that arrived for the gateway itself (not at an alias, which the bridge
// forwards).
func (a *Approver) handle(ctx context.Context, ev message.Event) {
	switch {
	case ev.Type == message.EventPermission && ev.Permission != nil:
		a.permission(ctx, *ev.Permission)
	case ev.Type == message.EventMessage && ev.Message != nil && ev.Message.AliasOf == "":
		a.inbound(ctx, *ev.Message) // a reply to a prompt, or left alone
	}
}

// background runs f in a bounded goroutine the approver owns; when all are
// busy it runs busy instead.
func (a *Approver) background(f, busy func()) {
	select {
	case a.slots <- struct{}{}:
	default:
		busy()
		return
	}
	a.bg.Add(1)
	go func() {
		defer func() { <-a.slots; a.bg.Done() }()
		f()
	}()
}

// isApprover says whether by (a PermissionAnswer's By) is the approver.
func (a *Approver) isApprover(by string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return by != "" && (by == a.who.Address || by == a.addr)
}

// permission takes a prompt event the broker just stamped: a new pending
// prompt is sent whole, a withdrawn or elsewhere-answered one announced.
// One the approver answered itself needs no notice: its reply is told.
func (a *Approver) permission(ctx context.Context, p message.PermissionRequest) {
	switch p.State {
	case message.PermissionPending:
		a.enqueue(ctx, func(ctx context.Context) string { return a.promptText(ctx, p) })
	case message.PermissionAnswered:
		if p.Answer != nil && a.isApprover(p.Answer.By) {
			return
		}
		a.enqueue(ctx, func(context.Context) string { return settledText(p) })
	case message.PermissionCancelled:
		a.enqueue(ctx, func(context.Context) string { return settledText(p) })
	}
}

// inbound looks at a message that arrived for the gateway itself. One whose
// first line starts with a reply verb is checked in the background: from the
// approver, it is a reply; from anyone else, it is left alone.
func (a *Approver) inbound(ctx context.Context, m message.Message) {
	if _, ok := answerfmt.ReplyVerbOf(m.Body); !ok {
		return
	}
	a.background(func() { a.reply(ctx, m) }, func() {
		a.log.Warn("approver reply not handled: the gateway is busy", "msg_id", m.ID, "from", m.From)
	})
}

// reply answers the prompt an approver's reply names and tells the approver
// how that went.
func (a *Approver) reply(ctx context.Context, m message.Message) {
	who, ok := a.from(ctx, m)
	if !ok {
		a.log.Debug("reply to a permission prompt from someone other than the approver ignored", "msg_id", m.ID, "from", m.From)
		return
	}
	if !a.writtenByApprover(ctx, &who, m) {
		a.log.Warn("reply to a permission prompt refused: it claims to come from the approver, but another process wrote it",
			"msg_id", m.ID, "from", m.From, "sender_pid", m.SenderPID, "approver_pid", who.PID)
		a.r.Dropped(ctx, m.Protocol, message.Drop{MsgID: m.ID, From: m.From, Reason: message.DropNotApprover})
		return
	}
	rep, err := answerfmt.ParseReply(m.Body)
	if err != nil {
		a.log.Info("approver reply not understood", "msg_id", m.ID, "err", err)
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
	a.log.Info("approver replied", "permission", rep.ID, "verb", rep.Verb.String(), "by", by)
	a.enqueue(ctx, func(context.Context) string { return text })
}

// apply carries out rep and says what came of it, for the approver.
func (a *Approver) apply(ctx context.Context, rep answerfmt.Reply, by string) string {
	p, err := a.r.Permission(rep.ID)
	if err != nil {
		return a.unknownText(rep.ID)
	}
	if err := message.CheckPending(p); err != nil {
		return "Not applied: " + err.Error() + "."
	}
	ans := message.PermissionAnswer{Behavior: message.BehaviorAllow, By: by}
	switch rep.Verb {
	case answerfmt.VerbAllow:
		if ans, err = rep.Allow.Answer(by); err != nil {
			return fmt.Sprintf("Not applied: %v.\n%s", err, replyForms(p))
		}
	case answerfmt.VerbDeny:
		ans.Behavior, ans.Message = message.BehaviorDeny, rep.Reason
	case answerfmt.VerbAnswer:
		if len(p.Questions) == 0 {
			return fmt.Sprintf("Not applied: %s is a %s request, not a question.\n%s", p.ID, message.OneLine(p.ToolName, 100), replyForms(p))
		}
		answers, err := answerfmt.ParseAnswers(p.Questions, rep.Specs)
		if err != nil {
			return fmt.Sprintf("Not applied: %v\n%s", err, replyForms(p))
		}
		ans.Answers = answers
	}
	actx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	got, err := a.r.AnswerPermission(actx, rep.ID, ans)
	var (
		ie *message.InvalidAnswerError
		le *router.LegError
	)
	switch {
	case err == nil:
		return doneText(got, ans)
	case errors.Is(err, message.ErrPermissionSettled):
		return "Not applied: " + err.Error() + "."
	case errors.Is(err, message.ErrNoPermission):
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
func (a *Approver) from(ctx context.Context, m message.Message) (message.Session, bool) {
	a.mu.Lock()
	who := a.who
	a.mu.Unlock()
	if a.matches(who, m) {
		return who, true
	}
	_, who, err := a.r.ResolveFresh(ctx, a.addr)
	if err != nil {
		a.log.Debug("approver address does not resolve", "approver", a.addr, "err", err)
		return message.Session{}, false
	}
	a.mu.Lock()
	a.who = who
	a.mu.Unlock()
	return who, a.matches(who, m)
}

// writtenByApprover checks who wrote m, where the leg knows: what a frame
// claims (from, from-session) any process of the user can write, so a
// message over a local socket counts only when the kernel's peer
// credentials name the approver's own process, or the alias worker that
// stands for it. who is looked up afresh once before a refusal, as a
// restarted approver has a new process. Other legs name the sender
// themselves (a remote session's stream, another host's signed envelope).
func (a *Approver) writtenByApprover(ctx context.Context, who *message.Session, m message.Message) bool {
	if m.Protocol != message.ProtocolClaude && m.Protocol != message.ProtocolQwen {
		return true
	}
	if m.SenderPID <= 0 {
		return false
	}
	if m.SenderPID == who.PID {
		return true
	}
	if _, fresh, err := a.r.ResolveFresh(ctx, a.addr); err == nil && a.matches(fresh, m) {
		*who = fresh
		a.mu.Lock()
		a.who = fresh
		a.mu.Unlock()
		if m.SenderPID == fresh.PID {
			return true
		}
	}
	for _, s := range a.r.Sessions(ctx) {
		if s.AliasOf != "" && s.AliasOf == who.Address && s.PID == m.SenderPID {
			return true
		}
	}
	return false
}

// matches compares m's sender with the approver's session: its address,
// else the session id the sender claims.
func (a *Approver) matches(who message.Session, m message.Message) bool {
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

// enqueue adds a notice, rendered when its turn comes, and starts the drain
// goroutine when none runs. A full queue drops the new notice. The drain
// takes no worker slot: replies holding every slot must not leave notices
// queued with nobody to send them.
func (a *Approver) enqueue(ctx context.Context, render func(context.Context) string) {
	a.mu.Lock()
	if len(a.queue) >= maxQueued {
		a.mu.Unlock()
		a.log.Warn("approver notice dropped: too many are waiting", "approver", a.addr, "waiting", maxQueued)
		return
	}
	a.queue = append(a.queue, render)
	if a.draining {
		a.mu.Unlock()
		return
	}
	a.draining = true
	a.mu.Unlock()
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		a.drain(ctx)
	}()
}

// drain sends the queued notices in order until the queue is empty or ctx
// ends.
func (a *Approver) drain(ctx context.Context) {
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
func (a *Approver) deliver(ctx context.Context, body string) {
	attempt := 0
	err := clock.Retry(ctx, a.clock, noticeBackoff.New(a.clock), func() error {
		attempt++
		err := a.send(ctx, body)
		if err != nil && ctx.Err() != nil {
			return backoff.Permanent(ctx.Err())
		}
		return err
	}, func(err error, wait time.Duration) {
		a.log.Info("approver notice failed; retrying", "approver", a.addr, "attempt", attempt, "retry_in", wait, "err", err)
	})
	if err != nil && ctx.Err() == nil {
		a.log.Warn("approver notice given up", "approver", a.addr, "attempts", attempt, "err", err)
	}
}

// send is one attempt: resolving the approver again each time, so a
// restarted approver is found.
func (a *Approver) send(ctx context.Context, body string) error {
	out, err := a.r.Send(ctx, router.SendRequest{To: a.addr, Body: strings.TrimSpace(body)})
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
