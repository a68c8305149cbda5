package federation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sessiongateway/gateway/message"
)

// Answers to prompts of other hosts: a kindAnswer envelope on the
// prompt's host's inbound subject, applied there through its router, a
// kindOutcome back on the answering host's receipt subject.

// promptAnswer is an answer to a prompt of the host it is sent to.
type promptAnswer struct {
	ID        string                   `json:"id"`     // this answer's: the outcome names it
	Prompt    string                   `json:"prompt"` // the prompt's id on its host
	SessionID string                   `json:"session_id"`
	RequestID string                   `json:"request_id"`
	Expires   time.Time                `json:"expires"` // not applied after this
	Answer    message.PermissionAnswer `json:"answer"`
}

type outcomeResult string

const (
	outcomeAnswered outcomeResult = "answered" // applied: this answer won
	outcomeSettled  outcomeResult = "settled"  // lost: settled before (State, Behavior, By)
	outcomeInvalid  outcomeResult = "invalid"  // the prompt cannot take it
	outcomeUnknown  outcomeResult = "unknown"  // no such prompt pending there
	outcomeExpired  outcomeResult = "expired"  // arrived after its expiry
	outcomeFailed   outcomeResult = "failed"   // the host's leg could not deliver it
)

// answerOutcome is what became of a promptAnswer.
type answerOutcome struct {
	ID       string                  `json:"id"`
	Result   outcomeResult           `json:"result"`
	State    message.PermissionState `json:"state,omitempty"`
	Behavior message.Behavior        `json:"behavior,omitempty"`
	By       string                  `json:"by,omitempty"`
	Error    string                  `json:"error,omitempty"`
}

// Answer sends a to the host req is pending on and waits for what became
// of it there: nil when it was applied, a *message.SettledError when an
// answer from elsewhere settled the prompt first.
func (l *Leg) Answer(ctx context.Context, req message.PermissionRequest, a message.PermissionAnswer) error {
	n, s := l.n, &l.n.pr
	host := req.Host
	s.mu.Lock()
	var orig message.PermissionRequest
	ok := false
	if h := s.others[host]; h != nil {
		orig, ok = h.byKey[promptKey{req.SessionID, req.RequestID}]
	}
	if !ok {
		s.mu.Unlock()
		return fmt.Errorf("host %q does not list this prompt (any more)", host)
	}
	if len(s.waiting) >= maxWaiting {
		s.mu.Unlock()
		return fmt.Errorf("%d answers already wait for other hosts", maxWaiting)
	}
	id := randomID()
	w := waiter{host: host, ch: make(chan answerOutcome, 1)}
	s.waiting[id] = w
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waiting, id)
		s.mu.Unlock()
	}()
	wait := answerWait
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, dl.Sub(n.now()))
	}
	pa := promptAnswer{ID: id, Prompt: orig.ID, SessionID: orig.SessionID, RequestID: orig.RequestID,
		Expires: n.now().Add(wait), Answer: a}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := n.publish(wctx, inSubject(host), "ans."+id, func() ([]byte, error) {
		return n.encode(envelope{Kind: kindAnswer, From: n.cfg.Host, To: host, Answer: &pa})
	}); err != nil {
		return err
	}
	select {
	case o := <-w.ch:
		return o.err(req.ID, host)
	case <-wctx.Done():
		return fmt.Errorf("host %s did not say within %s whether it applied the answer (it is not applied there after that)", host, wait.Round(time.Second))
	}
}

// err is the outcome as Answer returns it, for the prompt this host calls
// id.
func (o answerOutcome) err(id, host string) error {
	switch o.Result {
	case outcomeAnswered:
		return nil
	case outcomeSettled:
		return &message.SettledError{ID: id, State: o.State, Behavior: o.Behavior, By: onHost(o.By, host)}
	case outcomeUnknown:
		return fmt.Errorf("host %s has no such prompt pending", host)
	case outcomeExpired:
		return fmt.Errorf("the answer reached host %s after it expired; not applied", host)
	}
	return fmt.Errorf("host %s: %s", host, message.OneLine(o.Error, 500))
}

// outcomeIn hands an outcome to the Answer waiting for it. One from
// another host than the answer went to is dropped and counted; one nobody
// waits for any more is let go.
func (n *Node) outcomeIn(e envelope) {
	s := &n.pr
	s.mu.Lock()
	w, ok := s.waiting[e.Outcome.ID]
	s.mu.Unlock()
	switch {
	case !ok:
	case w.host != e.From:
		n.drops.add(ReasonMisrouted)
	default:
		select {
		case w.ch <- *e.Outcome:
		default: // a copy offered again: the first stands
		}
	}
}

// answerIn handles an answer from another host to one of this host's
// prompts: applied through the router in a bounded background slot, its
// outcome sent back and then the message acknowledged. An answer offered
// again gets the outcome it already had.
func (n *Node) answerIn(ctx context.Context, msg jetstream.Msg, e envelope) {
	s := &n.pr
	key := settledKey(e.From, e.Answer.ID)
	if o, ok := s.outcomes.Get(key); ok {
		n.sendOutcome(ctx, msg, e.From, o)
		return
	}
	s.mu.Lock()
	r, busy := s.router, s.applying[key]
	if !busy {
		s.applying[key] = true
	}
	s.mu.Unlock()
	if busy {
		return // being applied; its acknowledgement follows
	}
	done := func() {
		s.mu.Lock()
		delete(s.applying, key)
		s.mu.Unlock()
	}
	if r == nil {
		o := answerOutcome{ID: e.Answer.ID, Result: outcomeFailed, Error: "this host answers no prompts"}
		s.outcomes.Put(key, o)
		done()
		n.sendOutcome(ctx, msg, e.From, o)
		return
	}
	select {
	case s.slots <- struct{}{}:
	default:
		done()
		_ = msg.NakWithDelay(time.Second)
		return
	}
	s.bg.Add(1)
	go func() {
		defer func() { <-s.slots; done(); s.bg.Done() }()
		o := n.applyAnswer(ctx, r, e.From, *e.Answer)
		s.outcomes.Put(key, o)
		n.sendOutcome(ctx, msg, e.From, o)
	}()
}

// applyAnswer answers one of this host's prompts as from answers through
// r: the broker lets the first answer win.
func (n *Node) applyAnswer(ctx context.Context, r Router, from string, pa promptAnswer) answerOutcome {
	o := answerOutcome{ID: pa.ID}
	left := pa.Expires.Sub(n.now())
	if left <= 0 {
		o.Result = outcomeExpired
		return o
	}
	p, err := r.Permission(pa.Prompt)
	if err != nil || p.SessionID != pa.SessionID || p.RequestID != pa.RequestID || p.Leg == message.ProtocolFederation {
		o.Result = outcomeUnknown
		return o
	}
	a := pa.Answer
	a.By = onHost(a.By, from)
	actx, cancel := context.WithTimeout(ctx, min(left, answerWait))
	defer cancel()
	_, err = r.AnswerPermission(actx, pa.Prompt, a)
	var (
		se *message.SettledError
		ie *message.InvalidAnswerError
	)
	switch {
	case err == nil:
		o.Result = outcomeAnswered
	case errors.As(err, &se):
		o.Result, o.State, o.Behavior, o.By = outcomeSettled, se.State, se.Behavior, se.By
	case errors.As(err, &ie):
		o.Result, o.Error = outcomeInvalid, err.Error()
	case errors.Is(err, message.ErrNoPermission):
		o.Result = outcomeUnknown
	default:
		o.Result, o.Error = outcomeFailed, err.Error()
	}
	n.log.Info("federation answer applied", "permission", pa.Prompt, "from_host", from, "result", string(o.Result))
	return o
}

// sendOutcome sends o to host and acknowledges msg; when it cannot be
// sent, msg is offered again and o re-sent then.
func (n *Node) sendOutcome(ctx context.Context, msg jetstream.Msg, host string, o answerOutcome) {
	err := n.publish(ctx, receiptSubject(host), "out."+o.ID, func() ([]byte, error) {
		return n.encode(envelope{Kind: kindOutcome, From: n.cfg.Host, To: host, Outcome: &o})
	})
	if err != nil {
		n.log.Warn("federation answer outcome not sent", "to_host", host, "err", err)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	_ = msg.Ack()
}
