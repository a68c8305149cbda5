package outbox

import (
	"strings"
	"time"
	"unicode"

	"github.com/sessiongateway/gateway/message"
)

// Item is one outbox entry as `gateway outbox` shows it.
type Item struct {
	ID            string           `json:"id"`
	To            string           `json:"to"`
	ToName        string           `json:"to_name,omitempty"`
	Leg           message.Protocol `json:"leg"`
	Preview       string           `json:"body_preview"`
	State         State            `json:"state"`
	Attempts      int              `json:"attempts"`
	LastError     string           `json:"last_error,omitempty"`
	Failure       FailReason       `json:"failure,omitempty"`
	AcceptedAt    time.Time        `json:"accepted_at"`
	NextAttemptAt time.Time        `json:"next_attempt_at,omitzero"`
	FinishedAt    time.Time        `json:"finished_at,omitzero"`
	EventUUID     string           `json:"event_uuid,omitempty"`
}

// previewRunes bounds Item.Preview.
const previewRunes = 80

// Preview is the start of body on one line, for a table.
func Preview(body string) string {
	var b strings.Builder
	n := 0
	for _, r := range body {
		if n == previewRunes {
			b.WriteString("…")
			break
		}
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// Depth counts the pending entries from the store's count, reading none.
func (l *Leg) Depth() int {
	pending, _ := l.store.Len()
	return pending
}

// Outbox lists the pending entries, oldest first; with all, the kept
// acked and failed ones too.
func (l *Leg) Outbox(all bool) ([]Item, error) {
	es, err := l.store.List(all)
	if err != nil {
		return nil, err
	}
	items := make([]Item, len(es))
	for i, e := range es {
		items[i] = Item{
			ID: e.Message.ID, To: e.Message.To, ToName: e.Message.ToName, Leg: e.Leg,
			Preview: Preview(e.Message.Body), State: e.State, Attempts: e.Attempts,
			LastError: e.LastError, Failure: e.Failure, AcceptedAt: e.AcceptedAt,
			NextAttemptAt: e.NextAttempt, FinishedAt: e.FinishedAt,
		}
		if l.cfg.EventUUID != nil {
			items[i].EventUUID = l.cfg.EventUUID(e.Message.ID)
		}
	}
	return items, nil
}
