package promptleg

import (
	"context"
	"fmt"
	"sync"

	"github.com/sessiongateway/gateway/message"
)

// SessionID is the remote session the leg lists, at "bridge:"+SessionID,
// named fix-the-bug.
const SessionID = "session_01abc"

// Leg is a remote leg whose one session raises the prompts Raise hands it.
// Set Status, Gate and Entered before the router runs it.
type Leg struct {
	Status  string        // the listed session's status
	Gate    chan struct{} // when set, Answer waits for it to close
	Entered chan struct{} // when set, Answer says on it that it was called
	// Models are the models its session offers (Info); none: any.
	Models []message.ModelInfo

	started chan struct{}

	mu         sync.Mutex
	in         chan<- message.Event
	answers    []message.PermissionAnswer
	controls   []message.Control
	targets    []message.Session
	answerErr  error
	controlErr error
}

// New returns a Leg that has not run yet.
func New() *Leg { return &Leg{started: make(chan struct{})} }

func (l *Leg) Name() message.Protocol { return message.ProtocolRemote }

func (l *Leg) Sessions(context.Context) ([]message.Session, error) {
	return []message.Session{{Address: "bridge:" + SessionID, Protocol: message.ProtocolRemote, Name: "fix-the-bug",
		SessionID: SessionID, Status: l.Status, Reachable: true}}, nil
}

func (l *Leg) Send(_ context.Context, m message.Message) (message.Receipt, error) {
	return message.Receipt{MsgID: m.ID, Status: message.StatusSent}, nil
}

func (l *Leg) Run(ctx context.Context, in chan<- message.Event) error {
	l.mu.Lock()
	l.in = in
	l.mu.Unlock()
	close(l.started)
	<-ctx.Done()
	return nil
}

// Answer records a; with an error set it records nothing and returns it.
func (l *Leg) Answer(ctx context.Context, _ message.PermissionRequest, a message.PermissionAnswer) error {
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

// Control records c for target; with an error set it records nothing and
// returns it.
func (l *Leg) Control(_ context.Context, target message.Session, c message.Control) (message.ControlResult, error) {
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
func (l *Leg) Info(_ context.Context, target message.Session) (message.SessionInfo, error) {
	if target.SessionID != SessionID {
		return message.SessionInfo{}, fmt.Errorf("no session %s", target.SessionID)
	}
	return message.SessionInfo{SessionID: SessionID, Address: "bridge:" + SessionID, Followed: true,
		Initialized: l.Models != nil, Models: l.Models, Commands: []message.CommandInfo{}}, nil
}

// Started is closed once the router runs the leg.
func (l *Leg) Started() <-chan struct{} { return l.started }

// Raise waits until the leg runs and hands the router evs, in order.
func (l *Leg) Raise(evs ...message.Event) {
	<-l.started
	l.mu.Lock()
	in := l.in
	l.mu.Unlock()
	for _, ev := range evs {
		in <- ev
	}
}

// FailAnswers makes Answer return err from now on (nil: succeed again).
func (l *Leg) FailAnswers(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.answerErr = err
}

// FailControls makes Control return err from now on (nil: succeed again).
func (l *Leg) FailControls(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.controlErr = err
}

// Answers is every answer recorded so far.
func (l *Leg) Answers() []message.PermissionAnswer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]message.PermissionAnswer(nil), l.answers...)
}

// Controls is every control request recorded so far, and Targets the
// session each was for.
func (l *Leg) Controls() []message.Control {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]message.Control(nil), l.controls...)
}

// Targets is the session of each recorded control request, in order.
func (l *Leg) Targets() []message.Session {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]message.Session(nil), l.targets...)
}
