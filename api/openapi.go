package api

import "net/http"

// openapiDoc lists the endpoints. It is written by hand for now; a test
// checks that every path in it is served and every served path is in it.
var openapiDoc = map[string]any{
	"openapi": "3.1.0",
	"info":    map[string]any{"title": "gateway control API", "version": "1"},
	"paths": map[string]any{
		"/v1/sessions":         op("get", "List every reachable session on every leg."),
		"/v1/messages":         op("post", "Send a message to an address; with wait, block until a final receipt."),
		"/v1/messages/{id}":    op("get", "Where a sent message stands; ?wait=1&timeout=30s blocks until final."),
		"/v1/events":           op("get", "Server-sent events with ids; Last-Event-ID replays what was kept."),
		"/v1/held":             op("get", "Inbound messages held for a decision."),
		"/v1/held/{id}":        op("post", "Release or deny a held message."),
		"/v1/idle":             op("post", "Subscribe to a peer's idle notice; it arrives as an idle event."),
		"/v1/permissions":      op("get", "Pending permission prompts of remote sessions."),
		"/v1/permissions/{id}": op("post", "Answer a pending permission prompt."),
		"/healthz":             op("get", "The process is alive."),
		"/readyz":              op("get", "Every enabled leg is ready."),
		"/metrics":             op("get", "Prometheus text exposition."),
		"/openapi.json":        op("get", "This document."),
	},
}

func op(method, summary string) map[string]any {
	return map[string]any{method: map[string]any{
		"summary":   summary,
		"responses": map[string]any{"200": map[string]any{"description": "OK"}},
	}}
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, openapiDoc)
}
