package claudecli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"syscall"
)

// ErrNoEvents is returned by the event methods of a TUI session, which has
// no event stream.
var ErrNoEvents = errors.New("claudecli: a TUI session has no event stream")

// ErrExited is returned when the process exits while a caller waits.
var ErrExited = errors.New("claudecli: the session exited")

// Event is one line of stream-json output.
type Event struct {
	Type    string          // "system", "assistant", "user", "result", "control_response", ...
	Subtype string          // "init", "peer_message_hold", "success", ...
	Raw     json.RawMessage // the whole line, without its newline
}

func parseEvent(line []byte) Event {
	line = bytes.TrimSpace(line)
	var head struct {
		Type    string `json:"type"`
		Subtype string `json:"subtype"`
	}
	json.Unmarshal(line, &head) // a line that is not JSON stays an Event with Raw only
	return Event{Type: head.Type, Subtype: head.Subtype, Raw: append(json.RawMessage(nil), line...)}
}

// Decode unmarshals the whole event into v.
func (e Event) Decode(v any) error { return json.Unmarshal(e.Raw, v) }

// Is reports whether the event has this type and, if subtype is not empty,
// this subtype.
func (e Event) Is(typ, subtype string) bool {
	return e.Type == typ && (subtype == "" || e.Subtype == subtype)
}

// Events returns every stream-json event so far.
func (s *Session) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

// WaitEvent blocks until an event matching pred has arrived (looking at those
// already received first), the process exits, or ctx ends.
func (s *Session) WaitEvent(ctx context.Context, pred func(Event) bool) (Event, error) {
	if s.opts.Mode == ModeTUI {
		return Event{}, ErrNoEvents
	}
	seen := 0
	for {
		s.mu.Lock()
		evs, changed := s.events[seen:], s.changed
		s.mu.Unlock()
		for _, ev := range evs {
			if pred(ev) {
				return ev, nil
			}
		}
		seen += len(evs)
		select {
		case <-changed:
		case <-s.done:
			// Look once more: the last events land before done closes.
			s.mu.Lock()
			evs = s.events[seen:]
			s.mu.Unlock()
			for _, ev := range evs {
				if pred(ev) {
					return ev, nil
				}
			}
			return Event{}, fmt.Errorf("%w (%v)", ErrExited, s.exitErr())
		case <-ctx.Done():
			return Event{}, fmt.Errorf("claudecli: no matching event after %d: %w", seen, context.Cause(ctx))
		}
	}
}

// SendUserTurn sends text as a user message, which starts a turn (or queues
// behind the running one). In TUI mode it types the text and presses Enter.
func (s *Session) SendUserTurn(text string) error {
	if s.opts.Mode == ModeTUI {
		return s.typeTUI(text)
	}
	return s.writeLine(map[string]any{
		"type":    "user",
		"message": map[string]any{"role": "user", "content": text},
	})
}

// Turn sends text as a user message and waits for the next result event,
// which ends a turn. If a delivered peer message starts a turn of its own
// meanwhile, its result may be the one returned.
func (s *Session) Turn(ctx context.Context, text string) (Event, error) {
	before := s.count(func(e Event) bool { return e.Type == "result" })
	if err := s.SendUserTurn(text); err != nil {
		return Event{}, err
	}
	n := 0
	return s.WaitEvent(ctx, func(e Event) bool {
		if e.Type != "result" {
			return false
		}
		n++
		return n > before
	})
}

func (s *Session) count(pred func(Event) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.events {
		if pred(e) {
			n++
		}
	}
	return n
}

func (s *Session) writeLine(v any) error {
	if s.opts.Mode == ModeTUI {
		return ErrNoEvents
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, err := s.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("claudecli: writing to stdin: %w", err)
	}
	return nil
}

// Hold is a system/peer_message_hold event: a peer message the session's
// receive policy held instead of delivering, and later how the hold ended.
type Hold struct {
	State        string `json:"state"` // "held", then "released" or "dropped"
	HoldID       string `json:"hold_id"`
	MessageUUID  string `json:"message_uuid"`
	Lane         string `json:"lane"` // "socket"
	From         string `json:"from"` // uds:... as the frame claimed
	FromName     string `json:"from_name"`
	Cause        string `json:"cause"`   // "mode-mismatch", ...
	Outcome      string `json:"outcome"` // on "dropped": "denied", "discarded", ...
	CanDeliver   bool   `json:"can_deliver"`
	AlwaysScope  string `json:"always_scope"`  // "mine" (sender authenticated) or "anyone"
	SessionClass string `json:"session_class"` // "prompting" or "bypass"
	VerifiedPID  int    `json:"verified_pid"`  // the kernel's view of the sender
}

// WaitHold waits for a peer_message_hold event matching pred.
func (s *Session) WaitHold(ctx context.Context, pred func(Hold) bool) (Hold, error) {
	var h Hold
	_, err := s.WaitEvent(ctx, func(e Event) bool {
		if !e.Is("system", "peer_message_hold") {
			return false
		}
		var got Hold
		if e.Decode(&got) != nil || !pred(got) {
			return false
		}
		h = got
		return true
	})
	return h, err
}

// DecideHold answers a held peer message as the person at the host would:
// deliver it, or drop it (the sender is told "denied"). It returns the
// outcome the CLI reports ("delivered", "denied", ...).
func (s *Session) DecideHold(ctx context.Context, holdID string, deliver bool) (string, error) {
	decision := "drop"
	if deliver {
		decision = "deliver"
	}
	resp, err := s.control(ctx, map[string]any{
		"subtype": "decide_held_peer_message", "hold_id": holdID, "decision": decision,
	})
	if err != nil {
		return "", err
	}
	var out struct {
		Outcome string `json:"outcome"`
	}
	if err := json.Unmarshal(resp, &out); err != nil {
		return "", fmt.Errorf("claudecli: decide_held_peer_message answer %s: %w", resp, err)
	}
	return out.Outcome, nil
}

// control sends an SDK control_request and waits for its control_response,
// returning the response's inner payload.
func (s *Session) control(ctx context.Context, request map[string]any) (json.RawMessage, error) {
	s.writeMu.Lock()
	s.reqSeq++
	id := fmt.Sprintf("claudecli-%d", s.reqSeq)
	s.writeMu.Unlock()
	if err := s.writeLine(map[string]any{"type": "control_request", "request_id": id, "request": request}); err != nil {
		return nil, err
	}
	type controlResponse struct {
		Response struct {
			Subtype   string          `json:"subtype"`
			RequestID string          `json:"request_id"`
			Response  json.RawMessage `json:"response"`
			Error     string          `json:"error"`
		} `json:"response"`
	}
	var resp controlResponse
	_, err := s.WaitEvent(ctx, func(e Event) bool {
		var r controlResponse
		if e.Type != "control_response" || e.Decode(&r) != nil || r.Response.RequestID != id {
			return false
		}
		resp = r
		return true
	})
	if err != nil {
		return nil, err
	}
	if resp.Response.Subtype != "success" {
		return nil, fmt.Errorf("claudecli: control request %v failed: %s", request["subtype"], resp.Response.Error)
	}
	return resp.Response.Response, nil
}

// WriteJSON writes v as one raw stdin line, for frames the helpers above do
// not make: a control_response answering a can_use_tool request, a
// control_request of any subtype (see interop/FINDINGS-hosted.md).
func (s *Session) WriteJSON(v any) error { return s.writeLine(v) }

// WriteRaw writes line and a newline to stdin as they are, for what WriteJSON
// cannot make: a line that is not JSON.
func (s *Session) WriteRaw(line []byte) error {
	if s.opts.Mode == ModeTUI {
		return ErrNoEvents
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, err := s.stdin.Write(append(append([]byte(nil), line...), '\n')); err != nil {
		return fmt.Errorf("claudecli: writing to stdin: %w", err)
	}
	return nil
}

// Control sends an SDK control_request with this payload and waits for its
// success response, returning the inner payload; an error response is an
// error carrying the CLI's message.
func (s *Session) Control(ctx context.Context, request map[string]any) (json.RawMessage, error) {
	return s.control(ctx, request)
}

// CloseStdin closes the CLI's stdin, which in stream-json mode ends the
// session once the running turn is done. An exit after it is not an error
// for Stop.
func (s *Session) CloseStdin() error {
	if s.opts.Mode == ModeTUI {
		return ErrNoEvents
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.stdinClosed = true
	return s.stdin.Close()
}

// Kill ends the process with SIGKILL, as a crash or kill -9 would, and waits
// for it; the exit is not an error for Stop.
func (s *Session) Kill() error {
	s.writeMu.Lock()
	s.stdinClosed = true
	s.writeMu.Unlock()
	if err := syscall.Kill(s.pid, syscall.SIGKILL); err != nil {
		return err
	}
	<-s.done
	return nil
}

func (s *Session) closedStdin() bool {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.stdinClosed
}

// ExitCode is the process's exit status once Done is closed: -1 while it
// runs or when a signal ended it.
func (s *Session) ExitCode() int {
	select {
	case <-s.done:
	default:
		return -1
	}
	if s.cmd == nil || s.cmd.ProcessState == nil {
		return -1
	}
	return s.cmd.ProcessState.ExitCode()
}
