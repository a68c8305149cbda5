package legtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// SessionID is the remote session a PromptLeg lists, at
// "bridge:"+SessionID, named fix-the-bug.
const SessionID = "session_01abc"

// PromptLeg is a remote leg whose one session raises the prompts Raise
// hands it, and records the answers and control requests it is given (a
// Prompter, Controllable and Describer). Set Status, Gate and Entered
// before the router runs it.
type PromptLeg struct {
	Status  string        // the listed session's status
	Gate    chan struct{} // when set, Answer waits for it to close
	Entered chan struct{} // when set, Answer says on it that it was called
	// Models are the models its session offers (Info); none: any.
	Models []message.ModelInfo

	started chan struct{}
	emitter *leg.Emitter

	mu         sync.Mutex
	answers    []message.PermissionAnswer
	controls   []message.Control
	targets    []message.Session
	answerErr  error
	controlErr error
}

// NewPromptLeg returns a PromptLeg that has not run yet.
func NewPromptLeg() *PromptLeg {
	return &PromptLeg{started: make(chan struct{}), emitter: leg.NewEmitter(message.ProtocolRemote, time.Now)}
}

func (l *PromptLeg) Name() message.Protocol { return message.ProtocolRemote }

func (l *PromptLeg) Sessions(context.Context) ([]message.Session, error) {
	return []message.Session{{Address: "bridge:" + SessionID, Protocol: message.ProtocolRemote, Name: "fix-the-bug",
		SessionID: SessionID, Status: l.Status, Reachable: true}}, nil
}

// Send takes a message to its one session; any other address fails.
func (l *PromptLeg) Send(_ context.Context, m message.Message) (message.Receipt, error) {
	if m.To != "bridge:"+SessionID {
		return message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Reason: "no such session: " + m.To}, nil
	}
	return message.Receipt{MsgID: m.ID, Status: message.StatusSent}, nil
}

func (l *PromptLeg) Run(ctx context.Context, in chan<- message.Event) error {
	l.emitter.Attach(in)
	close(l.started)
	<-ctx.Done()
	l.emitter.Close()
	return nil
}

// Answer records a; with an error set it records nothing and returns it.
func (l *PromptLeg) Answer(ctx context.Context, _ message.PermissionRequest, a message.PermissionAnswer) error {
	if l.Entered != nil {
		l.Entered <- struct{}{}
	}
	if l.Gate != nil {
		select {
		case <-l.Gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.answerErr != nil {
		return l.answerErr
	}
	l.answers = append(l.answers, a)
	return nil
}

// Control records c for target, its one session (any other is an
// *addressing.NotFoundError); with an error set it records nothing and
// returns it.
func (l *PromptLeg) Control(_ context.Context, target message.Session, c message.Control) (message.ControlResult, error) {
	if target.SessionID != SessionID {
		return message.ControlResult{}, unknown(target)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.controlErr != nil {
		return message.ControlResult{}, l.controlErr
	}
	l.targets = append(l.targets, target)
	l.controls = append(l.controls, c)
	return message.ControlResult{RequestID: fmt.Sprintf("%s-%d", c.Kind, len(l.controls)), Acknowledged: true}, nil
}

// Info describes the leg's one session, followed, offering Models; any
// other is an error.
func (l *PromptLeg) Info(_ context.Context, target message.Session) (message.SessionInfo, error) {
	if target.SessionID != SessionID {
		return message.SessionInfo{}, unknown(target)
	}
	return message.SessionInfo{SessionID: SessionID, Address: "bridge:" + SessionID, Followed: true,
		Initialized: l.Models != nil, Models: l.Models, Commands: []message.CommandInfo{}}, nil
}

// unknown is the error for a session the leg does not list.
func unknown(target message.Session) error {
	return &addressing.NotFoundError{Kind: addressing.KindBridge, Query: target.Address}
}

// Started is closed once the router runs the leg.
func (l *PromptLeg) Started() <-chan struct{} { return l.started }

// Raise waits until the leg runs and hands the router evs, in order.
func (l *PromptLeg) Raise(evs ...message.Event) {
	<-l.started
	for _, ev := range evs {
		l.emitter.Emit(context.Background(), ev)
	}
}

// FailAnswers makes Answer return err from now on (nil: succeed again).
func (l *PromptLeg) FailAnswers(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.answerErr = err
}

// FailControls makes Control return err from now on (nil: succeed again).
func (l *PromptLeg) FailControls(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.controlErr = err
}

// Answers is every answer recorded so far.
func (l *PromptLeg) Answers() []message.PermissionAnswer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]message.PermissionAnswer(nil), l.answers...)
}

// Controls is every control request recorded so far, and Targets the
// session each was for.
func (l *PromptLeg) Controls() []message.Control {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]message.Control(nil), l.controls...)
}

// Targets is the session of each recorded control request, in order.
func (l *PromptLeg) Targets() []message.Session {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]message.Session(nil), l.targets...)
}
