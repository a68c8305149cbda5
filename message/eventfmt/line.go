package eventfmt

import (
	"fmt"

	"github.com/sessiongateway/gateway/message"
)

// SummaryWidth caps a prompt's summary so a line or table row stays one
// line.
const SummaryWidth = 100

// Line is ev as one line for `gateway watch`, starting with the local
// time; "" for an event not worth a line of its own (a streamed copy that
// is not final, an empty one).
func Line(ev message.Event) string {
	t := ev.Time.Local().Format("15:04:05")
	switch {
	case ev.Message != nil:
		// Watch shows traffic between other sessions too: say to whom, so
		// it does not read like a message to the reader. A message with no
		// recipient recorded came to the gateway's own inbox.
		m := ev.Message
		from := firstOf(m.FromName, m.From)
		to := firstOf(m.ToName, firstOf(m.To, m.AliasOf))
		if to == "" {
			to = "the gateway"
		}
		tag := ""
		if !m.Attested {
			tag = " (unattested)"
		}
		if m.Controller != "" {
			tag += " (controller " + m.Controller + ")"
		}
		return fmt.Sprintf("%s message from %s -> %s%s: %s", t, Clean(from), Clean(to), tag, Clean(m.Body))
	case ev.Receipt != nil:
		r := ev.Receipt
		return fmt.Sprintf("%s receipt %s %s", t, r.MsgID, Status(r.Status, []message.Receipt{*r}))
	case ev.Held != nil:
		return fmt.Sprintf("%s held %s from %s: %s (release or deny it: gateway release %s)", t, ev.Held.Message.ID, Clean(ev.Held.Message.FromName), Clean(ev.Held.Reason), ev.Held.Message.ID)
	case ev.Idle != nil:
		return fmt.Sprintf("%s idle %s is %s (subscription %s)", t, ev.Idle.Peer, ev.Idle.State, ev.Idle.SubID)
	case ev.Drop != nil:
		return fmt.Sprintf("%s drop %s from %s: %s", t, ev.Drop.MsgID, Clean(ev.Drop.From), ev.Drop.Reason)
	case ev.Remote != nil:
		// Across sessions, streamed copies would interleave: show only
		// what is complete (a Transcript streams one session).
		r := ev.Remote
		if r.Kind == "assistant" && !r.Final || r.Text == "" {
			return ""
		}
		return fmt.Sprintf("%s %s %s: %s", t, r.Address, r.Kind, message.OneLine(r.Text, 200))
	case ev.Permission != nil:
		p := ev.Permission
		switch p.State {
		case message.PermissionPending:
			return fmt.Sprintf("%s %s asks to use %s: %s (answer: %s | gateway deny %s --message TEXT)",
				t, p.Address, p.ToolName, p.Summary(SummaryWidth), withKind(*p).VerbHint(), p.ID)
		case message.PermissionAnswered:
			by := ""
			if p.Answer != nil {
				by = string(p.Answer.Behavior) + " by " + OrDash(p.Answer.By)
			}
			return fmt.Sprintf("%s permission %s answered: %s", t, p.ID, by)
		}
		return fmt.Sprintf("%s permission %s withdrawn by %s", t, p.ID, p.Address)
	case ev.Link != nil:
		l := ev.Link
		s := fmt.Sprintf("%s bridge:%s link %s", t, l.SessionID, l.State)
		if l.Error != "" {
			s += ": " + l.Error
		}
		return s
	}
	return fmt.Sprintf("%s %s", t, ev.Type)
}

// Status is a message's status with what its last receipt says: the drop
// reason or detail, the reason, and whether it is final.
func Status(st message.Status, rs []message.Receipt) string {
	s := st.String()
	if len(rs) > 0 {
		r := rs[len(rs)-1]
		if r.DropReason != 0 {
			s += " (" + r.DropReason.String() + ")"
		} else if r.Detail != "" {
			s += " (" + r.Detail + ")"
		}
		if r.Reason != "" {
			s += ": " + r.Reason
		}
	}
	if !st.Final() {
		s += " [not final]"
	}
	return s
}

// LastReason is the reason of the last receipt that gives one.
func LastReason(rs []message.Receipt) string {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Reason != "" {
			return rs[i].Reason
		}
	}
	return ""
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// OrDash is s, or "-" for an empty column.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
