package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/jsonx"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
)

// The hook endpoint: Claude Code's PermissionRequest, Notification and Stop
// hooks, installed by `gateway hooks install`, run `gateway hook EVENT`,
// which hands the hook's input to this socket and prints what it answers
// (docs/protocols/claude-hooks.md; what the real CLI does is in
// interop/FINDINGS-hooks.md). A PermissionRequest becomes a pending prompt
// of that session (source "hook"), answered through Answer like a remote
// session's; nobody answering in time gives the prompt back to the
// terminal.

// HookOptions configures the hook endpoint.
type HookOptions struct {
	// Socket is where `gateway hook` connects (<state-dir>/hooks.sock);
	// empty: no hook endpoint.
	Socket string
	// Wait is how long a prompt waits for an answer before the terminal
	// asks instead, unless the user is away; default DefaultLocalPromptWait.
	Wait time.Duration
	// Away says whether the user is away (then a prompt waits until an
	// answer, or the hook's own timeout); nil is never away.
	Away Away
	// MaxPerSession and MaxOpen cap the prompts waiting at once, per
	// session and in all; past them a hook gets no decision at once (the
	// terminal asks) and the refusal is counted.
	MaxPerSession, MaxOpen int
	// MaxInput caps one hook's input in bytes; default DefaultMaxHookInput.
	MaxInput int
	// MaxWait is the longest a hook connection is kept open, away or not;
	// default DefaultMaxHookWait.
	MaxWait time.Duration
}

// Away is the away switch the hook endpoint reads (internal/away.State).
type Away interface {
	Away() bool
	Changed() <-chan struct{}
}

// Defaults of HookOptions.
const (
	DefaultLocalPromptWait  = 20 * time.Second
	DefaultMaxHookPrompts   = 64
	DefaultMaxSessionHooks  = 8
	DefaultMaxHookInput     = 4 << 20
	DefaultMaxHookWait      = 24 * time.Hour
	hookFirstLineTimeout    = 5 * time.Second
	maxHookAncestors        = 8 // hops from the hook's process up to the session's
	maxHookSessionID        = 128
	maxHookToolName         = 256
	maxHookToolUseID        = 256
	maxHookNotificationText = 2 << 10
)

// Hook events, as Claude Code names them.
const (
	HookPermissionRequest = "PermissionRequest"
	HookNotification      = "Notification"
	HookStop              = "Stop"
	// A tool that ran, or failed, while its prompt still waited here was
	// allowed at the terminal: these settle the gateway's copy.
	HookPostToolUse        = "PostToolUse"
	HookPostToolUseFailure = "PostToolUseFailure"
)

// HookEvents are the events `gateway hook` and `gateway hooks install` handle.
var HookEvents = []string{HookPermissionRequest, HookNotification, HookStop, HookPostToolUse, HookPostToolUseFailure}

// AnsweredAtTerminal is the answered_by of a hook prompt the person at the
// session's terminal answered before anyone here did.
const AnsweredAtTerminal = "terminal"

// HookRequest is the one line `gateway hook` writes: the event and the
// hook's input as Claude Code gave it on stdin.
type HookRequest struct {
	V     int             `json:"v"`
	Event string          `json:"event"`
	Input json.RawMessage `json:"input"`
}

// HookReply is a line the endpoint writes back. The first says whether it
// took the request (OK, with the prompt's request id); for a
// PermissionRequest a second, Final, carries the hook's stdout (Output,
// nil for no decision) and why.
type HookReply struct {
	OK     bool            `json:"ok,omitempty"`
	ID     string          `json:"id,omitempty"`
	Error  string          `json:"error,omitempty"`
	Final  bool            `json:"final,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	Reason string          `json:"reason,omitempty"`
}

// hookInput is what the gateway reads of a hook's input; the rest is
// Claude Code's and passes by.
type hookInput struct {
	SessionID      string          `json:"session_id"`
	Cwd            string          `json:"cwd"`
	PermissionMode string          `json:"permission_mode"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
	Suggestions    []wireUpdate    `json:"permission_suggestions"`
	Message        string          `json:"message"`
	Type           string          `json:"notification_type"`
}

// HookStats counts what the hook endpoint did.
type HookStats struct {
	Prompts  uint64 // prompts raised
	Answered uint64 // answered through the gateway
	Returned uint64 // given back to the terminal: no answer in time, away switched off, shutdown
	Gone     uint64 // the hook ended first (answered at the terminal, or its timeout)
	Terminal uint64 // settled as answered at the terminal: the tool ran, or the turn ended, while it waited
	Refused  uint64 // over a cap, or input that does not parse
}

// hooks is the endpoint's state.
type hooks struct {
	opt   HookOptions
	ln    *uds.Listener
	clock clock.Clock

	mu        sync.Mutex
	open      map[string]*hookPrompt // by request id
	bySession map[string]int

	prompts, answered, returned, gone, terminal, refused atomic.Uint64
}

// hookPrompt is one waiting PermissionRequest hook.
type hookPrompt struct {
	req message.PermissionRequest
	// answer takes the one answer that wins; its reply says whether the
	// hook got it.
	answer chan hookAnswer
	done   chan struct{} // closed when the hook connection is settled
	// elsewhere is closed (once, under hooks.mu) when the session shows
	// the prompt was settled at its terminal; why says how.
	elsewhere chan struct{}
	why       terminalEnd
}

// terminalEnd is how a session showed a prompt was settled at its
// terminal.
type terminalEnd int

const (
	notAtTerminal terminalEnd = iota
	toolRan                   // PostToolUse or PostToolUseFailure of the same tool and input: allowed there
	turnEnded                 // Stop: the turn is over, so the prompt was answered (or dropped) there
)

type hookAnswer struct {
	out   json.RawMessage
	reply chan error
}

func (o HookOptions) withDefaults() HookOptions {
	if o.Wait <= 0 {
		o.Wait = DefaultLocalPromptWait
	}
	if o.MaxOpen <= 0 {
		o.MaxOpen = DefaultMaxHookPrompts
	}
	if o.MaxPerSession <= 0 {
		o.MaxPerSession = DefaultMaxSessionHooks
	}
	o.MaxPerSession = min(o.MaxPerSession, o.MaxOpen)
	if o.MaxInput <= 0 {
		o.MaxInput = DefaultMaxHookInput
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxHookWait
	}
	return o
}

// listenHooks opens the hook socket.
func listenHooks(opt HookOptions, c clock.Clock) (*hooks, error) {
	opt = opt.withDefaults()
	ln, err := uds.Listen(opt.Socket, uds.Limits{
		MaxLine:          opt.MaxInput + 1024, // the request's own fields around the input
		FirstLineTimeout: hookFirstLineTimeout,
		LineTimeout:      hookFirstLineTimeout,
		MaxConns:         opt.MaxOpen + 16, // room for Notification and Stop beside open prompts
		MaxConnsPerPeer:  4,                // a hook process sends one request; a few, so one process may stand for several
		MaxConnAge:       opt.MaxWait + time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("hook socket: %w", err)
	}
	return &hooks{opt: opt, ln: ln, clock: c, open: map[string]*hookPrompt{}, bySession: map[string]int{}}, nil
}

// HookStats reports the hook endpoint's counters; zero without one.
func (p *Leg) HookStats() HookStats {
	h := p.hooks
	if h == nil {
		return HookStats{}
	}
	return HookStats{Prompts: h.prompts.Load(), Answered: h.answered.Load(), Returned: h.returned.Load(), Gone: h.gone.Load(),
		Terminal: h.terminal.Load(), Refused: h.refused.Load()}
}

// HookSocket is the hook endpoint's socket path; empty without one.
func (p *Leg) HookSocket() string {
	if p.hooks == nil {
		return ""
	}
	return p.hooks.ln.Path()
}

// serveHook handles one `gateway hook` connection.
func (p *Leg) serveHook(ctx context.Context, c *uds.Conn) {
	h := p.hooks
	if c.Cred.UID != p.uid && c.Cred.UID != 0 {
		// The socket's directory is ours alone; this is a belt to it.
		h.refused.Add(1)
		return
	}
	line, err := c.ReadLine()
	if err != nil {
		h.refused.Add(1)
		return
	}
	event, in, err := parseHookRequest(line)
	if err != nil {
		h.refused.Add(1)
		writeHookReply(c, HookReply{Error: err.Error()})
		return
	}
	s := p.hookSession(c.Cred.PID, in)
	switch event {
	case HookPermissionRequest:
		p.permissionHook(ctx, c, s, in)
	case HookNotification:
		writeHookReply(c, HookReply{OK: true})
		p.notice(message.Event{Type: message.EventIdle, Idle: &message.IdleNotice{Peer: s.Address, State: "waiting",
			Detail: bounded.Clip(in.Message, maxHookNotificationText)}})
	case HookPostToolUse, HookPostToolUseFailure:
		writeHookReply(c, HookReply{OK: true})
		h.settleAtTerminal(in, toolRan)
	case HookStop:
		writeHookReply(c, HookReply{OK: true})
		h.settleAtTerminal(in, turnEnded)
		p.notice(message.Event{Type: message.EventIdle, Idle: &message.IdleNotice{Peer: s.Address, State: "idle",
			FinishedAt: p.clock.Now().UTC(), Detail: "the turn ended (Stop hook)"}})
	}
}

// parseHookRequest reads the request line `gateway hook` writes: its
// event and the hook's input, checked. The error is the reply's.
func parseHookRequest(line []byte) (string, hookInput, error) {
	var rq HookRequest
	if err := json.Unmarshal(line, &rq); err != nil || rq.V != 1 {
		return "", hookInput{}, errors.New("not a gateway hook request (v 1)")
	}
	var in hookInput
	if err := json.Unmarshal(rq.Input, &in); err != nil {
		return "", hookInput{}, errors.New("the hook's input is not a JSON object of Claude Code's")
	}
	if err := checkHookInput(rq.Event, in); err != nil {
		return "", hookInput{}, err
	}
	return rq.Event, in, nil
}

// checkHookInput refuses what cannot be a hook of ours before anything is
// kept.
func checkHookInput(event string, in hookInput) error {
	if !slices.Contains(HookEvents, event) {
		return fmt.Errorf("unknown hook event %q", event)
	}
	if in.SessionID == "" || len(in.SessionID) > maxHookSessionID {
		return errors.New(`the hook's input has no usable "session_id"`)
	}
	switch event {
	case HookPermissionRequest, HookPostToolUse, HookPostToolUseFailure:
	default:
		return nil
	}
	if in.ToolName == "" || len(in.ToolName) > maxHookToolName {
		return errors.New(`the hook's input has no usable "tool_name"`)
	}
	if len(in.ToolUseID) > maxHookToolUseID {
		return errors.New(`the hook's "tool_use_id" is too long`)
	}
	if len(in.ToolInput) > 0 && in.ToolInput[0] != '{' {
		return errors.New(`the hook's "tool_input" is not an object`)
	}
	return nil
}

// hookSession is the session a hook speaks for: the registry entry of the
// closest ancestor of the hook's process whose session id is the one the
// hook names (the hook runs under the session, through a shell). A hook
// whose claim no ancestor backs is still heard, under its session id alone:
// the prompt is the hook's to lose, and an answer goes back only to it.
func (p *Leg) hookSession(pid int, in hookInput) message.Session {
	s := message.Session{Protocol: message.ProtocolClaude, SessionID: in.SessionID, Cwd: in.Cwd, Ref: addressing.Ref(in.SessionID)}
	for i := 0; i < maxHookAncestors && pid > 1; i++ {
		_, ppid, err := uds.ProcState(pid)
		if err != nil {
			break
		}
		pid = ppid
		e, err := p.entries.Get(filepath.Join(p.sessionsDir, strconv.Itoa(pid)+".json"))
		if err != nil || e.SessionID != in.SessionID {
			continue
		}
		s.PID, s.Name, s.Kind, s.Status = e.PID, e.Name, e.Kind, e.Status
		if e.MessagingSocketPath != "" {
			s.Address, s.NativeRef = addressing.UDS(e.MessagingSocketPath), NativeRef(e.MessagingSocketPath)
		}
		return s
	}
	return s
}

// permissionHook raises the prompt and waits for its answer, the hook's
// end, the local wait, or the away switch turning off.
func (p *Leg) permissionHook(ctx context.Context, c *uds.Conn, s message.Session, in hookInput) {
	h := p.hooks
	req := message.PermissionRequest{
		SessionID: in.SessionID, Address: s.Address, Name: s.Name, Leg: message.ProtocolClaude, Source: message.SourceHook,
		RequestID: uuid.NewString(), ToolName: in.ToolName, ToolUseID: in.ToolUseID, Input: in.ToolInput,
		Created: p.clock.Now().UTC(), State: message.PermissionPending,
	}
	if len(req.Input) == 0 {
		req.Input = json.RawMessage("{}")
	}
	for _, u := range in.Suggestions {
		if len(req.Suggestions) == message.MaxSuggestions {
			break
		}
		if m := u.model(); m.Valid() {
			req.Suggestions = append(req.Suggestions, m)
		}
	}
	hp := &hookPrompt{req: req, answer: make(chan hookAnswer), done: make(chan struct{}), elsewhere: make(chan struct{})}
	if err := h.add(hp); err != nil {
		h.refused.Add(1)
		p.log.Info("hook prompt refused", "session_id", in.SessionID, "tool", in.ToolName, "err", err)
		writeHookReply(c, HookReply{Error: err.Error()})
		return
	}
	h.prompts.Add(1)
	defer h.remove(hp)
	if err := writeHookReply(c, HookReply{OK: true, ID: req.RequestID}); err != nil {
		h.gone.Add(1)
		return
	}
	p.log.Info("hook prompt raised", "session_id", in.SessionID, "name", s.Name, "tool", in.ToolName, "request_id", req.RequestID)
	p.log.Debug("hook prompt input", "request_id", req.RequestID, "tool_input", string(req.Input))
	pending := req
	p.emit(ctx, message.Event{Type: message.EventPermission, Permission: &pending})

	closed := make(chan struct{})
	_ = c.UnixConn.SetReadDeadline(time.Now().Add(h.opt.MaxWait + time.Minute))
	go func() { // the hook's side closes when it ends: killed, or timed out
		defer close(closed)
		var b [1]byte
		for {
			if _, err := c.UnixConn.Read(b[:]); err != nil {
				return
			}
		}
	}()
	reason := p.awaitHook(ctx, c, hp, closed)
	_ = c.UnixConn.SetReadDeadline(time.Unix(1, 0)) // ends the reader
	<-closed
	if reason == "" {
		return // answered: the router settles it
	}
	withdrawn := req
	withdrawn.State = message.PermissionCancelled
	if reason == reasonAtTerminal {
		h.mu.Lock()
		why := hp.why
		h.mu.Unlock()
		if why == toolRan {
			// The tool ran: it was allowed there, by the person at it.
			withdrawn.State = message.PermissionAnswered
			withdrawn.Answer = &message.PermissionAnswer{Behavior: message.BehaviorAllow, By: AnsweredAtTerminal}
		}
	}
	p.log.Info("hook prompt given back", "request_id", req.RequestID, "reason", reason)
	// Also at shutdown, briefly: the router may already have stopped reading.
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	p.emit(ectx, message.Event{Type: message.EventPermission, Permission: &withdrawn})
}

// awaitHook waits for the prompt's end and says why it ended unanswered
// ("" once answered).
func (p *Leg) awaitHook(ctx context.Context, c *uds.Conn, hp *hookPrompt, closed <-chan struct{}) string {
	h := p.hooks
	start := p.clock.Now()
	giveBack := func(reason string) string {
		h.returned.Add(1)
		_ = writeHookReply(c, HookReply{Final: true, Reason: reason})
		return reason
	}
	longest, stopLongest := clock.After(p.clock, h.opt.MaxWait)
	defer stopLongest.Stop()
	for {
		var awayCh <-chan struct{}
		away := false
		if h.opt.Away != nil {
			awayCh = h.opt.Away.Changed()
			away = h.opt.Away.Away() // read after Changed: a switch in between wakes us
		}
		var waitC <-chan struct{}
		stopWait := clock.Stopper(noStop{})
		if !away {
			left := h.opt.Wait - p.clock.Now().Sub(start)
			if left <= 0 {
				return giveBack("no answer within the local prompt wait; the terminal asks")
			}
			waitC, stopWait = clock.After(p.clock, left)
		}
		select {
		case a := <-hp.answer:
			stopWait.Stop()
			err := writeHookReply(c, HookReply{Final: true, Output: a.out})
			a.reply <- err
			if err != nil {
				h.gone.Add(1)
				return "the hook ended before the answer reached it"
			}
			h.answered.Add(1)
			return ""
		case <-closed:
			stopWait.Stop()
			h.gone.Add(1)
			return "the hook ended (answered at the terminal, or its timeout)"
		case <-hp.elsewhere:
			stopWait.Stop()
			h.terminal.Add(1)
			_ = writeHookReply(c, HookReply{Final: true, Reason: reasonAtTerminal})
			return reasonAtTerminal
		case <-waitC:
		case <-awayCh:
			stopWait.Stop()
		case <-longest:
			stopWait.Stop()
			return giveBack("the longest hook wait passed")
		case <-ctx.Done():
			stopWait.Stop()
			return giveBack("the gateway is stopping")
		}
	}
}

type noStop struct{}

func (noStop) Stop() bool { return false }

func (h *hooks) add(hp *hookPrompt) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.open) >= h.opt.MaxOpen {
		return fmt.Errorf("%d local prompts are already waiting; the terminal asks", h.opt.MaxOpen)
	}
	if h.bySession[hp.req.SessionID] >= h.opt.MaxPerSession {
		return fmt.Errorf("%d prompts of this session are already waiting; the terminal asks", h.opt.MaxPerSession)
	}
	h.open[hp.req.RequestID] = hp
	h.bySession[hp.req.SessionID]++
	return nil
}

func (h *hooks) remove(hp *hookPrompt) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.open[hp.req.RequestID] != hp {
		return
	}
	close(hp.done)
	delete(h.open, hp.req.RequestID)
	if h.bySession[hp.req.SessionID]--; h.bySession[hp.req.SessionID] <= 0 {
		delete(h.bySession, hp.req.SessionID)
	}
}

// answerHook hands a to the waiting hook of req. A hook that is no longer
// waiting lost the race (to the terminal, or to its own timeout): the
// answer is refused as settled, never reported as delivered.
func (p *Leg) answerHook(ctx context.Context, req message.PermissionRequest, a message.PermissionAnswer) error {
	h := p.hooks
	if h == nil {
		return message.ErrNotPrompter
	}
	out, err := hookOutput(req, a)
	if err != nil {
		return err
	}
	h.mu.Lock()
	hp := h.open[req.RequestID]
	h.mu.Unlock()
	if hp == nil || hp.req.SessionID != req.SessionID {
		return &message.PromptSettledError{State: message.PermissionCancelled}
	}
	reply := make(chan error, 1)
	select {
	case hp.answer <- hookAnswer{out: out, reply: reply}:
	case <-hp.done:
		return &message.PromptSettledError{State: message.PermissionCancelled}
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := <-reply; err != nil {
		return &message.PromptSettledError{State: message.PermissionCancelled}
	}
	return nil
}

// Answer answers a prompt the hook endpoint raised (the only prompts of
// this leg).
func (p *Leg) Answer(ctx context.Context, req message.PermissionRequest, a message.PermissionAnswer) error {
	return p.answerHook(ctx, req, a)
}

// hookWriteTimeout bounds one reply's write: the hook reads at once.
const hookWriteTimeout = 2 * time.Second

func writeHookReply(c *uds.Conn, r HookReply) error {
	b, err := jsonx.Marshal(r)
	if err != nil {
		return err
	}
	_ = c.UnixConn.SetWriteDeadline(time.Now().Add(hookWriteTimeout))
	_, err = c.UnixConn.Write(append(b, '\n'))
	return err
}
