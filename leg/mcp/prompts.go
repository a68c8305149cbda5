package mcp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// Prompts of channels: a Claude Code session that loaded `gateway mcp` as
// a channel relays its permission prompts to it
// (notifications/claude/channel/permission_request); each one is a pending
// prompt of that client (source channel), and the answer goes back as the
// channel's reply (Reply), which carries allow or deny and nothing else.
// The session never says when a prompt was answered at its terminal, so a
// prompt stays until it is answered here or the client leaves.

// Caps of the channel prompts open at once.
const (
	MaxPromptsPerClient = 16
	MaxPrompts          = 256
)

// Reply sends a channel prompt's answer back to its client.
type Reply = func(ctx context.Context, requestID string, b message.Behavior) error

// ErrTooManyPrompts refuses a channel prompt past MaxPromptsPerClient or
// MaxPrompts.
var ErrTooManyPrompts = errors.New("mcp: too many channel prompts are waiting")

// prompts are the channel prompts waiting for an answer.
type prompts struct {
	mu       sync.Mutex
	open     map[promptKey]*prompt
	byClient map[string]int // by the client's SessionID
	refused  atomic.Uint64
}

type promptKey struct{ session, request string }

type prompt struct {
	req   message.PermissionRequest
	reply Reply
}

var _ leg.Prompter = (*Leg)(nil)

// Prompt makes req, a permission request the channel of me relayed, a
// pending prompt of me; reply carries its answer. It fills in who asks
// (me) and when; a request id me already has waiting is refused, and so is
// one past the caps (counted, PromptsRefused).
func (l *Leg) Prompt(ctx context.Context, me message.Session, req message.PermissionRequest, reply Reply) error {
	if l.lookup(me) == nil {
		return ErrLeft
	}
	req.SessionID, req.Address, req.Name, req.Leg = me.SessionID, me.Address, me.Name, message.ProtocolMCP
	req.Source, req.State, req.Created = message.SourceChannel, message.PermissionPending, l.clk.Now().UTC()
	k := promptKey{me.SessionID, req.RequestID}
	p := &l.prompts
	p.mu.Lock()
	switch {
	case p.open[k] != nil:
		p.mu.Unlock()
		p.refused.Add(1)
		return fmt.Errorf("mcp: a channel prompt with request id %q is already waiting", req.RequestID)
	case len(p.open) >= MaxPrompts:
		p.mu.Unlock()
		p.refused.Add(1)
		return fmt.Errorf("%w: %d in all", ErrTooManyPrompts, MaxPrompts)
	case p.byClient[me.SessionID] >= MaxPromptsPerClient:
		p.mu.Unlock()
		p.refused.Add(1)
		return fmt.Errorf("%w: %d of this client", ErrTooManyPrompts, MaxPromptsPerClient)
	}
	if p.open == nil {
		p.open, p.byClient = map[promptKey]*prompt{}, map[string]int{}
	}
	p.open[k] = &prompt{req: req, reply: reply}
	p.byClient[me.SessionID]++
	p.mu.Unlock()
	if !l.emitter.Emit(ctx, message.Event{Type: message.EventPermission, Permission: &req}) {
		p.take(k)
		return ErrNotRunning
	}
	return nil
}

// PromptsRefused counts the channel prompts refused: over a cap, or a
// request id already waiting.
func (l *Leg) PromptsRefused() uint64 { return l.prompts.refused.Load() }

// Answer sends a to the channel whose prompt req is. The channel carries a
// bare allow or deny: an answer with more (updated input, answers, rules,
// suggestions, a mode, a deny message) is refused with AnswerNotCarried,
// the router's check failing open.
func (l *Leg) Answer(ctx context.Context, req message.PermissionRequest, a message.PermissionAnswer) error {
	if err := message.CheckCarried(req, a); err != nil {
		return err
	}
	k := promptKey{req.SessionID, req.RequestID}
	pr := l.prompts.take(k)
	if pr == nil {
		return &message.PromptSettledError{State: message.PermissionCancelled}
	}
	if err := pr.reply(ctx, req.RequestID, a.Behavior); err != nil {
		// Not sent: the prompt waits for another answer, unless its
		// client left meanwhile (then it is withdrawn after all).
		l.prompts.put(k, pr)
		if l.lookup(message.Session{Name: pr.req.Name, SessionID: pr.req.SessionID}) == nil {
			l.withdraw(pr.req.SessionID)
		}
		return err
	}
	return nil
}

func (p *prompts) take(k promptKey) *prompt {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr := p.open[k]
	if pr == nil {
		return nil
	}
	delete(p.open, k)
	if p.byClient[k.session]--; p.byClient[k.session] <= 0 {
		delete(p.byClient, k.session)
	}
	return pr
}

func (p *prompts) put(k promptKey, pr *prompt) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open[k] = pr
	p.byClient[k.session]++
}

// withdraw takes every prompt of the client whose SessionID is session and
// tells the router each is withdrawn: a client that left answers none.
func (l *Leg) withdraw(session string) {
	p := &l.prompts
	p.mu.Lock()
	var gone []message.PermissionRequest
	for k, pr := range p.open {
		if k.session == session {
			delete(p.open, k)
			gone = append(gone, pr.req)
		}
	}
	delete(p.byClient, session)
	p.mu.Unlock()
	for _, req := range gone {
		req.State = message.PermissionCancelled
		// The router may be stopping: wait briefly, not forever.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		l.emitter.Emit(ctx, message.Event{Type: message.EventPermission, Permission: &req})
		cancel()
	}
}
