package api

import (
	"maps"
	"net/http"
)

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
		"/v1/permissions":      op("get", "Pending permission prompts of remote sessions, oldest first; ?all=true adds recently settled ones."),
		"/v1/permissions/{id}": ops(op("get", "One permission prompt, pending or recently settled."), op("post", permissionAnswerDoc)),
		"/v1/control":          op("post", "Send a session a control request: {address, kind: interrupt|set_permission_mode|set_model, mode, model}."),
		"/v1/resolve":          op("get", "The session ?address= resolves to, as sends and control requests resolve it."),
		"/v1/outbox":           op("get", "Messages accepted for a remote session and not yet acknowledged by its server, oldest first; ?all=true adds recently acknowledged and failed ones."),
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

const permissionAnswerDoc = "Answer a pending prompt with a PermissionAnswer (behavior allow|deny, updated_input, " +
	"answers by question text, message, rules, rule_destination); 200 with the settled prompt, 404 unknown, " +
	"409 already settled, 400 invalid, 502 the leg could not deliver it."

// ops documents several methods of one path.
func ops(methods ...map[string]any) map[string]any {
	all := map[string]any{}
	for _, m := range methods {
		maps.Copy(all, m)
	}
	return all
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, openapiDoc)
}
