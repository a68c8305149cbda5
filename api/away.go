package api

import (
	"net/http"
	"strings"
	"time"
)

// answeredBy is who answers through this request, as the prompt records
// it: the grant the request authenticated as, never what the body says.
// The control socket is its owner's alone, so there the client may say
// which of its tools answered ("socket:cli").
func answeredBy(r *http.Request, said string) string {
	g, _ := GrantFrom(r.Context())
	switch {
	case g.ID == socketOwner:
		if said == "" {
			said = "api"
		}
		return "socket:" + said
	case strings.HasPrefix(g.ID, "pair_"):
		return "console:" + g.ID
	default:
		return "token:" + g.ID
	}
}

// AwayBody is the body of PUT /v1/away.
type AwayBody struct {
	Away *bool `json:"away"`
}

// AwayStatus answers /v1/away.
type AwayStatus struct {
	Away  bool      `json:"away"`
	Since time.Time `json:"since,omitzero"`
}

func (s *Server) getAway(w http.ResponseWriter, r *http.Request) {
	st := s.cfg.Router.Away()
	writeJSON(w, http.StatusOK, AwayStatus(st))
}

func (s *Server) putAway(w http.ResponseWriter, r *http.Request) {
	var b AwayBody
	if err := decode(r, &b); err != nil {
		s.fail(w, err)
		return
	}
	if b.Away == nil {
		s.fail(w, errBadRequest(`"away" is required: true or false`))
		return
	}
	st, err := s.cfg.Router.SetAway(*b.Away)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, AwayStatus(st))
}
