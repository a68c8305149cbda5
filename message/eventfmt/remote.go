package eventfmt

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/sessiongateway/gateway/message"
)

// RemoteSessions writes `gateway remote sessions`' table.
func RemoteSessions(w io.Writer, ss []message.Session) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSESSION\tSTATUS\tADDRESS")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", OrDash(s.Name), s.SessionID, OrDash(s.Status), s.Address)
	}
	tw.Flush()
}

// Environments writes `gateway remote environments`' table.
func Environments(w io.Writer, envs []message.Environment) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENVIRONMENT\tNAME\tKIND\tSTATE\tONLINE\tMACHINE\tDIRECTORY")
	for _, e := range envs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%s\t%s\n", e.ID, OrDash(e.Name), OrDash(e.Kind), OrDash(e.State), e.Online, OrDash(e.Machine), OrDash(e.Directory))
	}
	tw.Flush()
}

// RemoteSession writes one remote session after a lifecycle change: its
// id, status, title and address.
func RemoteSession(w io.Writer, s message.Session) {
	fmt.Fprintf(w, "%s %s %q %s\n", s.SessionID, OrDash(s.Status), s.Title, s.Address)
}

// SessionWatch prints one remote session's events as `gateway remote
// watch` shows them: a transcript, or one JSON event per line.
type SessionWatch struct {
	w      io.Writer
	sid    string
	asJSON bool
	tr     *Transcript
}

// NewSessionWatch prints the events of session sid to w.
func NewSessionWatch(w io.Writer, sid string, asJSON bool) *SessionWatch {
	return &SessionWatch{w: w, sid: sid, asJSON: asJSON, tr: NewTranscript(w, Prompt)}
}

// Pending shows the session's prompts raised before the watch began.
func (s *SessionWatch) Pending(ps []message.PermissionRequest) {
	for _, p := range ps {
		if p.SessionID == s.sid {
			s.tr.Event(message.Event{Type: message.EventPermission, Time: p.Created, Permission: &p})
		}
	}
}

// Event prints ev when it is about the session.
func (s *SessionWatch) Event(ev message.Event) error {
	if !AboutSession(ev, s.sid) {
		return nil
	}
	if !s.asJSON {
		s.tr.Event(ev)
		return nil
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(s.w, "%s\n", b)
	return err
}

// End ends a line left open by streamed text.
func (s *SessionWatch) End() { s.tr.EndLine() }
