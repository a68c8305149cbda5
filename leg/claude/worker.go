package claude

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/internal/jsonx"
	"github.com/sessiongateway/gateway/message"
)

// maxWorkerLine caps a line on a worker's control pipe, both ways. The
// longest line a worker writes for what a peer sent is the event of one
// frame (at most MaxLine): encoded without HTML escaping, its strings grow
// at most twice (U+2028 and U+2029 are escaped, 3 bytes to 6; control
// characters were escaped on the frame's line already), so 4 MiB holds it
// with room. A writer refuses a longer line (errOpTooLong) rather than
// wedge the reader.
const maxWorkerLine = 4 << 20

// errOpTooLong is an op refused for passing maxWorkerLine.
var errOpTooLong = errors.New("too long for the alias worker's control pipe")

// encodeOp is op as one control line, its newline included.
func encodeOp(op WorkerOp) ([]byte, error) {
	b, err := jsonx.Marshal(op)
	if err != nil {
		return nil, err
	}
	if len(b)+1 > maxWorkerLine {
		return nil, errOpTooLong
	}
	return append(b, '\n'), nil
}

// WorkerOp is one line on a worker's control pipe.
type WorkerOp struct {
	Op string `json:"op"` // parent→worker: send, stop; worker→parent: ready, event, sent

	// ready
	Address   string `json:"address,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	PID       int    `json:"pid,omitempty"`

	// send (parent→worker) and sent (worker→parent)
	Message *message.Message `json:"message,omitempty"`
	MsgID   string           `json:"msg_id,omitempty"`
	Error   string           `json:"error,omitempty"`

	// event, and with it the process that wrote its message to the
	// worker's socket as the worker's SO_PEERCRED named it: the message's
	// SenderPID, which message.Message's own JSON leaves out so that no
	// wire can claim it. Absent (an older worker) or outside 1..maxPID it
	// reads as 0, unknown.
	Event     *message.Event `json:"event,omitempty"`
	SenderPID int            `json:"sender_pid,omitempty"`

	// relay (parent→worker): tell the sender of Receipt.MsgID
	Receipt *message.Receipt `json:"receipt,omitempty"`
}

// Worker ops.
const (
	OpReady = "ready"
	OpEvent = "event"
	OpSend  = "send"
	OpSent  = "sent"
	OpStop  = "stop"
)

// maxPID is the largest pid Linux hands out (PID_MAX_LIMIT on 64-bit): a
// sender pid past it on the control pipe is no process's.
const maxPID = 1 << 22

// eventOp is ev as an event line, carrying its message's sender pid.
func eventOp(ev message.Event) WorkerOp {
	op := WorkerOp{Op: OpEvent, Event: &ev}
	if m := eventMessage(&ev); m != nil {
		op.SenderPID = m.SenderPID
	}
	return op
}

// event is the event of an event line, its message's SenderPID restored
// from the line (0 when absent or out of range), never from the message.
func (op WorkerOp) event() message.Event {
	ev := *op.Event
	if m := eventMessage(&ev); m != nil && op.SenderPID > 0 && op.SenderPID <= maxPID {
		m.SenderPID = op.SenderPID
	}
	return ev
}

// eventMessage is the message ev carries, received or held; nil when none.
func eventMessage(ev *message.Event) *message.Message {
	switch {
	case ev.Message != nil:
		return ev.Message
	case ev.Held != nil:
		return &ev.Held.Message
	}
	return nil
}

// WorkerFD is the descriptor a worker finds its control pipe on.
const WorkerFD = 3

// RunWorker is the body of a worker process: register cfg as a peer, say
// ready on ctl, relay what arrives, send what the parent asks, and return
// when ctl closes, the parent says stop, or ctx ends.
func RunWorker(ctx context.Context, cfg Config, ctl io.ReadWriter) error {
	peer, err := Register(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wmu sync.Mutex
	write := func(op WorkerOp) {
		b, err := encodeOp(op)
		if errors.Is(err, errOpTooLong) && op.Event != nil && op.Event.Message != nil {
			// Not an event a frame under MaxLine makes (see maxWorkerLine);
			// refused rather than written past the gateway's reader.
			id := op.Event.Message.ID
			go func() {
				rctx, rcancel := context.WithTimeout(ctx, receiptTimeout)
				defer rcancel()
				peer.relay(rctx, id, message.Receipt{MsgID: id, Status: message.StatusFailed, Reason: "Too long for the gateway to take"})
			}()
		}
		if err != nil {
			return
		}
		wmu.Lock()
		defer wmu.Unlock()
		if _, err := ctl.Write(b); err != nil {
			cancel() // the parent is gone
		}
	}
	events := make(chan message.Event, 64)
	done := make(chan error, 1)
	go func() { done <- peer.Run(ctx, events) }()
	write(WorkerOp{Op: OpReady, Address: peer.Address(), SessionID: peer.SessionID(), PID: os.Getpid()})
	sends := &targetQueues{queues: map[string][]message.Message{}, send: func(m message.Message) {
		sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
		defer scancel()
		res := WorkerOp{Op: OpSent, MsgID: m.ID}
		if _, err := peer.Send(sctx, m); err != nil {
			res.Error = err.Error()
		}
		write(res)
	}}

	go func() {
		defer cancel()
		sc := bufio.NewScanner(ctl)
		sc.Buffer(make([]byte, 64<<10), maxWorkerLine)
		defer func() {
			// A line too long, or a broken pipe: the parent can no longer be
			// followed. End (closing the pipe unblocks a write), so the
			// parent reaps this process and starts another.
			if sc.Err() != nil {
				if c, ok := ctl.(io.Closer); ok {
					_ = c.Close()
				}
			}
		}()
		for sc.Scan() {
			var op WorkerOp
			if json.Unmarshal(sc.Bytes(), &op) != nil {
				continue
			}
			switch op.Op {
			case OpStop:
				return
			case OpRelay:
				if op.Receipt != nil {
					rc := *op.Receipt
					go func() {
						rctx, rcancel := context.WithTimeout(ctx, receiptTimeout)
						defer rcancel()
						peer.relay(rctx, rc.MsgID, rc)
					}()
				}
			case OpSend:
				if op.Message != nil {
					sends.add(*op.Message)
				}
			}
		}
	}()
	for {
		select {
		case ev := <-events:
			write(eventOp(ev))
		case err := <-done:
			for len(events) > 0 { // accepted before the stop: still the parent's to hear
				ev := <-events
				write(eventOp(ev))
			}
			return err
		}
	}
}

// targetQueues writes a worker's messages to each target one at a time,
// in the order the parent asked for them (each write is a connection of
// its own, which the receiver may serve in any order once two are open),
// while different targets are written side by side. The parent bounds
// what it asks for before the answers come.
type targetQueues struct {
	send   func(message.Message)
	mu     sync.Mutex
	queues map[string][]message.Message // by target; present while its writer runs
}

func (q *targetQueues) add(m message.Message) {
	q.mu.Lock()
	queue, running := q.queues[m.To]
	q.queues[m.To] = append(queue, m)
	q.mu.Unlock()
	if !running {
		go q.run(m.To)
	}
}

// run writes to's messages until none is left.
func (q *targetQueues) run(to string) {
	for {
		q.mu.Lock()
		queue := q.queues[to]
		if len(queue) == 0 {
			delete(q.queues, to)
			q.mu.Unlock()
			return
		}
		m := queue[0]
		q.queues[to] = queue[1:]
		q.mu.Unlock()
		q.send(m)
	}
}
