package eventfmt

import (
	"fmt"
	"io"
	"strings"

	"github.com/sessiongateway/gateway/message"
)

// keepShown bounds how many assistant messages a Transcript remembers.
const keepShown = 256

// Transcript writes one remote session's events for people. A streamed
// assistant message arrives as growing copies under one message id: only
// the new suffix is written, so the text reads as it is typed.
type Transcript struct {
	w      io.Writer
	prompt func(io.Writer, message.PermissionRequest)
	open   string            // the message id whose text ends the current line
	shown  map[string]string // text written so far, by message id
	order  []string          // shown's keys, oldest first
	// prompted are the pending prompts shown; one watch sees few prompts.
	prompted map[string]bool
}

// NewTranscript writes to w; prompt writes a pending permission prompt
// and how to answer it, after the time (nil writes its summary line).
func NewTranscript(w io.Writer, prompt func(io.Writer, message.PermissionRequest)) *Transcript {
	if prompt == nil {
		prompt = func(w io.Writer, p message.PermissionRequest) {
			fmt.Fprintf(w, "permission %s from %s: %s %s\n", p.ID, p.SessionID, p.ToolName, p.Summary(SummaryWidth))
		}
	}
	return &Transcript{w: w, prompt: prompt, shown: map[string]string{}, prompted: map[string]bool{}}
}

// AboutSession says whether ev is one of the remote session sid's own
// events: its output, its prompts, its link.
func AboutSession(ev message.Event, sid string) bool {
	switch ev.Type {
	case message.EventRemote:
		return ev.Remote != nil && ev.Remote.SessionID == sid
	case message.EventPermission:
		return ev.Permission != nil && ev.Permission.SessionID == sid
	case message.EventLink:
		return ev.Link != nil && ev.Link.SessionID == sid
	}
	return false
}

// EndLine finishes a streamed message's line.
func (p *Transcript) EndLine() {
	if p.open != "" {
		fmt.Fprintln(p.w)
		p.open = ""
	}
}

// Event writes ev.
func (p *Transcript) Event(ev message.Event) {
	t := ev.Time.Local().Format("15:04:05")
	switch {
	case ev.Remote != nil:
		p.remote(t, ev.Remote)
	case ev.Permission != nil:
		p.EndLine()
		switch pr := ev.Permission; pr.State {
		case message.PermissionPending:
			if p.prompted[pr.ID] {
				return // listed when the watch started, or replayed
			}
			p.prompted[pr.ID] = true
			fmt.Fprintf(p.w, "%s ", t)
			p.prompt(p.w, *pr)
		case message.PermissionAnswered:
			how, by := "", ""
			if pr.Answer != nil {
				how, by = string(pr.Answer.Behavior), pr.Answer.By
			}
			fmt.Fprintf(p.w, "%s permission %s answered: %s by %s\n", t, pr.ID, how, OrDash(by))
		case message.PermissionCancelled:
			fmt.Fprintf(p.w, "%s permission %s withdrawn by the session\n", t, pr.ID)
		}
	case ev.Link != nil:
		p.EndLine()
		l := ev.Link
		s := fmt.Sprintf("%s link %s", t, l.State)
		if l.Attempt > 0 {
			s += fmt.Sprintf(" (attempt %d)", l.Attempt)
		}
		if l.Error != "" {
			s += ": " + l.Error
		}
		fmt.Fprintln(p.w, s)
	}
}

func (p *Transcript) remote(t string, r *message.RemoteEvent) {
	switch r.Kind {
	case "assistant":
		p.assistant(t, r)
	case "user", "result":
		if r.Text != "" {
			p.EndLine()
			fmt.Fprintf(p.w, "%s %s: %s\n", t, r.Kind, r.Text)
		}
	case "control_request", "control_response", "control_cancel_request":
		// Prompts show as permission events, with their ids; a request
		// the gateway refused for the session says so.
		if r.Control != nil && r.Control.Unserved {
			p.EndLine()
			fmt.Fprintf(p.w, "%s %s\n", t, r.Text)
		}
	default:
		if r.Text != "" {
			p.EndLine()
			fmt.Fprintf(p.w, "%s %s: %s\n", t, r.Kind, r.Text)
		}
	}
}

func (p *Transcript) assistant(t string, r *message.RemoteEvent) {
	if r.MessageID == "" {
		if r.Text != "" {
			p.EndLine()
			fmt.Fprintf(p.w, "%s assistant: %s\n", t, r.Text)
		}
		return
	}
	prev, seen := p.shown[r.MessageID]
	switch {
	case seen && strings.HasPrefix(r.Text, prev):
		if suffix := r.Text[len(prev):]; suffix != "" {
			if p.open != r.MessageID {
				p.EndLine()
				fmt.Fprintf(p.w, "%s assistant: …", t)
			}
			fmt.Fprint(p.w, suffix)
			p.open = r.MessageID
		}
	case r.Text != "":
		// New, or its content was replaced: write it whole on a fresh line.
		p.EndLine()
		fmt.Fprintf(p.w, "%s assistant: %s", t, r.Text)
		p.open = r.MessageID
	}
	p.remember(r.MessageID, r.Text)
	if r.Final && p.open == r.MessageID {
		p.EndLine()
	}
}

func (p *Transcript) remember(id, text string) {
	if _, ok := p.shown[id]; !ok {
		p.order = append(p.order, id)
		if len(p.order) > keepShown {
			delete(p.shown, p.order[0])
			p.order = p.order[1:]
		}
	}
	p.shown[id] = text
}
