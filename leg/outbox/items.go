package outbox

import "github.com/sessiongateway/gateway/message"

// Depth counts the pending entries from the store's count, reading none.
func (l *Leg) Depth() int {
	pending, _ := l.store.Len()
	return pending
}

// Outbox lists the pending entries, oldest first; with all, the kept
// acked and failed ones too.
func (l *Leg) Outbox(all bool) ([]message.OutboxItem, error) {
	es, err := l.store.List(all)
	if err != nil {
		return nil, err
	}
	items := make([]message.OutboxItem, len(es))
	for i, e := range es {
		items[i] = message.OutboxItem{
			ID: e.Message.ID, To: e.Message.To, ToName: e.Message.ToName, Leg: e.Leg,
			Preview: message.Preview(e.Message.Body), State: e.State, Attempts: e.Attempts,
			LastError: e.LastError, Failure: e.Failure, AcceptedAt: e.AcceptedAt,
			NextAttemptAt: e.NextAttempt, FinishedAt: e.FinishedAt,
		}
		if l.cfg.EventUUID != nil {
			items[i].EventUUID = l.cfg.EventUUID(e.Message.ID)
		}
	}
	return items, nil
}
