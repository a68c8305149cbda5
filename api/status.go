package api

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// Status is GET /v1/status: the gateway on one screen (gateway status).
type Status struct {
	Version       string      `json:"version"`
	StartedAt     time.Time   `json:"started_at"`
	UptimeSeconds int64       `json:"uptime_seconds"`
	Legs          []LegStatus `json:"legs"`
	// Links are the remote sessions' live streams as their last kept link
	// event left them; a session whose events have scrolled out is absent.
	Links          []message.Link `json:"links"`
	PendingPrompts int            `json:"pending_prompts"`
	Held           int            `json:"held"`
	// OutboxDepth is the remote messages stored and not yet acknowledged;
	// absent without a remote leg.
	OutboxDepth *int `json:"outbox_depth,omitempty"`
	// Federation is GET /v1/federation's answer; absent without federation.
	Federation any `json:"federation,omitempty"`
	// ConsoleURL is where the web console (and the API) is reached over
	// TCP; absent when serve has no --api.
	ConsoleURL string `json:"console_url,omitempty"`
}

// LegStatus is one leg in Status.
type LegStatus struct {
	Name  string `json:"name"`
	State string `json:"state"` // ready, or why not
	// Sessions counts the leg's own sessions; Aliases the gateway's
	// aliases published on it (the bridge).
	Sessions int `json:"sessions"`
	Aliases  int `json:"aliases"`
	// Hosts counts the leg's sessions by federation host, when any has one.
	Hosts map[string]int `json:"hosts,omitempty"`
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.Status(r.Context()))
}

// Status gathers the answer of GET /v1/status.
func (s *Server) Status(ctx context.Context) Status {
	rt := s.cfg.Router
	now := s.cfg.Clock.Now()
	st := Status{Version: s.cfg.Version, StartedAt: s.started.UTC(), UptimeSeconds: int64(now.Sub(s.started).Seconds()),
		Links: []message.Link{}, PendingPrompts: len(rt.Permissions()), Held: len(rt.Held())}
	legs := map[string]*LegStatus{}
	for name, err := range rt.Ready() {
		l := &LegStatus{Name: string(name), State: "ready"}
		if err != nil {
			l.State = err.Error()
		}
		legs[l.Name] = l
	}
	for _, ss := range rt.Sessions(ctx) {
		l := legs[string(ss.Protocol)]
		if l == nil {
			l = &LegStatus{Name: string(ss.Protocol), State: "ready"}
			legs[l.Name] = l
		}
		if ss.AliasOf != "" {
			l.Aliases++
			continue
		}
		l.Sessions++
		if ss.Host != "" {
			if l.Hosts == nil {
				l.Hosts = map[string]int{}
			}
			l.Hosts[ss.Host]++
		}
	}
	for _, l := range legs {
		st.Legs = append(st.Legs, *l)
	}
	sort.Slice(st.Legs, func(i, j int) bool { return st.Legs[i].Name < st.Legs[j].Name })
	if _, ok := legs[string(message.ProtocolRemote)]; ok {
		if n, ok := rt.OutboxDepth(); ok {
			st.OutboxDepth = &n
		}
	}
	st.Links = lastLinks(rt.Hub())
	if s.cfg.Federation != nil {
		st.Federation = s.cfg.Federation(ctx)
	}
	if u := s.ConsoleURL(); u != "/" {
		st.ConsoleURL = u
	}
	return st
}

// lastLinks reads the kept events for each remote session's latest link
// state, oldest session first.
func lastLinks(h *router.Hub) []message.Link {
	replay, _, sub := h.Subscribe(0)
	sub.Close()
	last, order := map[string]message.Link{}, []string{}
	for _, ev := range replay {
		if ev.Link == nil {
			continue
		}
		if _, seen := last[ev.Link.SessionID]; !seen {
			order = append(order, ev.Link.SessionID)
		}
		last[ev.Link.SessionID] = *ev.Link
	}
	out := make([]message.Link, 0, len(order))
	for _, id := range order {
		out = append(out, last[id])
	}
	return out
}

// Status asks for GET /v1/status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	return st, c.do(ctx, "GET", "/v1/status", nil, &st)
}
