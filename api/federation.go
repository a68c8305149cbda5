package api

import (
	"context"
	"encoding/json"
	"net/http"
)

// FederationStatus is GET /v1/federation's answer when the gateway runs
// without federation; with it, the answer is what Config.Federation
// returns (the federation package's Status, which this package does not
// import), with "enabled": true.
type FederationStatus struct {
	Enabled bool `json:"enabled"`
}

func (s *Server) federation(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Federation == nil {
		writeJSON(w, http.StatusOK, FederationStatus{})
		return
	}
	writeJSON(w, http.StatusOK, s.cfg.Federation(r.Context()))
}

// Federation returns GET /v1/federation's answer as it came, for the
// federation package to read.
func (c *Client) Federation(ctx context.Context) (json.RawMessage, error) {
	var raw json.RawMessage
	return raw, c.do(ctx, "GET", "/v1/federation", nil, &raw)
}
