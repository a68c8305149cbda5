package api

import (
	"context"
	"net/http"
	"slices"

	"github.com/sessiongateway/gateway/message"
)

// outbox lists the messages waiting for a server's acknowledgement, oldest
// first; ?all=true adds the recently acknowledged and failed ones. With no
// outbox (no remote leg) the list is empty.
func (s *Server) outbox(w http.ResponseWriter, r *http.Request) {
	all, err := queryBool(r, "all")
	if err != nil {
		s.fail(w, err)
		return
	}
	items, err := s.cfg.Router.Outbox(all)
	if err != nil {
		s.fail(w, err)
		return
	}
	if items == nil {
		items = []message.OutboxItem{}
	}
	slices.SortStableFunc(items, func(a, b message.OutboxItem) int { return a.AcceptedAt.Compare(b.AcceptedAt) })
	writeJSON(w, http.StatusOK, items)
}

// Outbox lists the messages accepted for a remote session and not yet
// acknowledged by its server; all adds the recently acknowledged and
// failed ones.
func (c *Client) Outbox(ctx context.Context, all bool) ([]message.OutboxItem, error) {
	path := "/v1/outbox"
	if all {
		path += "?all=true"
	}
	var items []message.OutboxItem
	return items, c.do(ctx, "GET", path, nil, &items)
}
