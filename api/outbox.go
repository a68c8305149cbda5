package api

import (
	"context"
	"net/http"
	"slices"

	"github.com/sessiongateway/gateway/leg/outbox"
	"github.com/sessiongateway/gateway/router"
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
	items, err := router.Outbox[outbox.Item](s.cfg.Router, all)
	if err != nil {
		s.fail(w, err)
		return
	}
	if items == nil {
		items = []outbox.Item{}
	}
	slices.SortStableFunc(items, func(a, b outbox.Item) int { return a.AcceptedAt.Compare(b.AcceptedAt) })
	writeJSON(w, http.StatusOK, items)
}

// Outbox lists the messages accepted for a remote session and not yet
// acknowledged by its server; all adds the recently acknowledged and
// failed ones.
func (c *Client) Outbox(ctx context.Context, all bool) ([]outbox.Item, error) {
	path := "/v1/outbox"
	if all {
		path += "?all=true"
	}
	var items []outbox.Item
	return items, c.do(ctx, "GET", path, nil, &items)
}
