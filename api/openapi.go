package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// The OpenAPI document is generated from the route table and the Go types
// it names, by a small reflector written for the shapes this API has
// (openapi_schema.go); the words are in openapi_docs.go and the closed sets
// in openapi_enums.go. api/openapi.json is the committed copy, which a test
// keeps equal to what is served (go test ./api -run TestTheCommittedOpenAPI
// -update rewrites it, and docs/api.md's route table; so does go generate ./api).

//go:generate go test -run TestTheCommittedOpenAPIDocumentIsTheServedOne|TestTheAPIPageSaysWhichRoutesNeedWhichScope -update .

var (
	docOnce sync.Once
	docJSON []byte
)

// OpenAPI returns the OpenAPI 3.1 document of the API.
func OpenAPI() map[string]any {
	g := newSchemaGen()
	g.defs["Error"] = g.structSchema(reflect.TypeFor[Error]())
	g.defs["StreamNotice"] = streamNotice()
	paths := map[string]any{}
	for _, rt := range routes {
		item, _ := paths[rt.path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[rt.path] = item
		}
		item[strings.ToLower(rt.method)] = g.operation(rt)
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "gateway control API",
			"version":     "1",
			"description": apiDescription,
			"license":     map[string]any{"name": "Apache-2.0", "identifier": "Apache-2.0"},
		},
		"servers": []any{map[string]any{
			"url":         "{origin}{prefix}",
			"description": "The --api listener (the Unix control socket serves the same routes at its root, without tokens).",
			"variables": map[string]any{
				"origin": map[string]any{"default": "http://127.0.0.1:8080", "description": "The scheme, host and port --api listens on (https with --tls-cert)."},
				"prefix": map[string]any{"default": "", "description": "The --api-prefix path, if any, such as /gateway."},
			},
		}},
		"paths": paths,
		"components": map[string]any{
			"schemas": g.defs,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "A token from <state-dir>/api-token (every scope) or gateway tokens add (the scopes it names). The requirement of each operation lists the scope it needs."},
				"cookie": map[string]any{"type": "apiKey", "in": "cookie", "name": SessionCookie, "description": "A browser session from POST /v1/login, with the scopes of the token or pairing that signed it in; state-changing requests must also carry its CSRF token in X-CSRF-Token."},
			},
		},
		"security": []any{map[string]any{"bearer": []any{}}, map[string]any{"cookie": []any{}}},
	}
}

const apiDescription = "The gateway's HTTP control API. Over TCP (--api) every operation but the probes and the sign-in routes needs a bearer token (or a browser session cookie) holding the scope its security requirement names: read for every GET and the event stream, send for messages, idle subscriptions and remote sessions, approve for answering prompts, deciding held messages, control requests and archiving, files for attaching files. The Unix control socket needs no token. Errors are an Error object whose code fixes the status."

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

func (g *schemaGen) operation(rt route) map[string]any {
	op := map[string]any{
		"summary":     summaryOf(rt.summary),
		"description": rt.summary,
		"operationId": operationID(rt),
	}
	var params []any
	for _, m := range pathParam.FindAllStringSubmatch(rt.path, -1) {
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true,
			"description": pathParamDocs[rt.path+" "+m[1]], "schema": map[string]any{"type": "string"}})
	}
	for _, q := range rt.query {
		params = append(params, map[string]any{"name": q.name, "in": "query", "description": q.doc, "schema": map[string]any{"type": q.typ}})
	}
	for _, h := range headerParams[rt.pattern()] {
		params = append(params, map[string]any{"name": h.name, "in": "header", "description": h.doc, "schema": map[string]any{"type": h.typ}})
	}
	if params != nil {
		op["parameters"] = params
	}
	switch {
	case rt.scope != 0:
		op["x-scope"] = rt.scope.String()
		op["security"] = []any{map[string]any{"bearer": []any{rt.scope.String()}}, map[string]any{"cookie": []any{rt.scope.String()}}}
	default:
		op["security"] = []any{}
	}
	if rt.in != nil {
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
			"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(rt.in))}}}
	}
	ok := map[string]any{"description": http.StatusText(rt.successStatus())}
	switch {
	case rt.produces == "text/event-stream":
		ok["content"] = map[string]any{rt.produces: map[string]any{"schema": g.eventStream(reflect.TypeOf(rt.out))}}
	case rt.produces != "":
		ok["content"] = map[string]any{rt.produces: map[string]any{"schema": map[string]any{"type": "string", "description": "Plain text."}}}
	case rt.out != nil:
		ok["content"] = map[string]any{"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(rt.out))}}
	}
	if h := replyHeaders[rt.pattern()]; h != nil {
		ok["headers"] = h
	}
	errBody := map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}
	responses := map[string]any{
		strconv.Itoa(rt.successStatus()): ok,
		"4XX":                            map[string]any{"description": "The request was refused; code says why (bad_request, unauthorized, forbidden, not_found, rate_limited with Retry-After, ...).", "content": errBody},
		"default":                        map[string]any{"description": "The gateway or a leg failed; code says how (bad_gateway, timeout, unavailable, storage_full, ...).", "content": errBody},
	}
	for code, doc := range plainErrors[rt.pattern()] {
		responses[strconv.Itoa(code)] = map[string]any{"description": doc,
			"content": map[string]any{"text/plain": map[string]any{"schema": map[string]any{"type": "string", "description": "What happened, for a person."}}}}
	}
	if what, ok := streamRoutes[rt.pattern()]; ok {
		responses["429"] = map[string]any{"description": fmt.Sprintf("Rate limited, or %s refused: this client holds %d event streams and waits, or the gateway %d (code rate_limited, Retry-After).", what, MaxStreamsPerGrant, MaxStreams),
			"headers": map[string]any{"Retry-After": map[string]any{"description": "Seconds to wait before retrying.", "schema": map[string]any{"type": "integer"}}},
			"content": errBody}
	}
	if rt.pattern() == "GET /readyz" {
		responses["503"] = map[string]any{"description": "A leg is not ready; legs says which.", "content": ok["content"]}
	}
	op["responses"] = responses
	return op
}

// eventStream describes a server-sent event stream of out's JSON objects.
// OpenAPI 3.1 has no keyword for one item of a stream (3.2's itemSchema),
// so the stream is described as the sequence of its events, each event's
// data as a JSON string whose content is out (or a StreamNotice).
func (g *schemaGen) eventStream(out reflect.Type) map[string]any {
	return map[string]any{
		"type":        "array",
		"description": "A text/event-stream, described as its sequence of events. Each event has an id (the Event's id), an event name (its type) and one data line holding the Event as JSON. A gap notice comes first when events after Last-Event-ID were forgotten; an error notice ends a stream that failed. Comment lines keep the connection alive.",
		"items": map[string]any{
			"type":     "object",
			"required": []string{"data"},
			"properties": map[string]any{
				"id":    map[string]any{"type": "string", "pattern": "^[0-9]+$", "description": "The Event's id, to resume from with Last-Event-ID."},
				"event": map[string]any{"type": "string", "enum": append(enumOf(reflect.TypeFor[eventTypeT]()), "gap", "error"), "description": "The Event's type, or gap or error for a StreamNotice."},
				"data": map[string]any{"type": "string", "contentMediaType": "application/json", "description": "The Event as JSON (a StreamNotice for gap and error).",
					"contentSchema": map[string]any{"oneOf": []any{g.schema(out), map[string]any{"$ref": "#/components/schemas/StreamNotice"}}}},
			},
		},
	}
}

func streamNotice() map[string]any {
	return map[string]any{
		"type":        "object",
		"description": "What the event stream says about itself rather than about the gateway: a gap (events were forgotten) or an error (the stream ends).",
		"required":    []string{"type", "error"},
		"properties": map[string]any{
			"type":  map[string]any{"type": "string", "enum": []string{"gap", "error"}, "description": "gap: some events after Last-Event-ID were forgotten; error: the stream failed and ends."},
			"error": map[string]any{"type": "string", "description": "What happened, for a person."},
		},
	}
}

// summaryOf is a route's first clause, for the operation's summary; the
// whole text is its description.
func summaryOf(s string) string {
	for _, sep := range []string{". ", "; ", ": ", " ("} {
		if i := strings.Index(s, sep); i > 0 {
			s = s[:i]
		}
	}
	return strings.TrimSuffix(s, ".")
}

func (rt route) successStatus() int {
	if rt.status == 0 {
		return http.StatusOK
	}
	return rt.status
}

func operationID(rt route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(rt.method))
	for _, part := range strings.FieldsFunc(rt.path, func(r rune) bool { return r == '/' || r == '.' || r == '{' || r == '}' || r == '_' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// openAPIJSON is the served document: indented, with a final newline, as
// api/openapi.json holds it.
func openAPIJSON() []byte {
	docOnce.Do(func() {
		b, err := json.MarshalIndent(OpenAPI(), "", "  ")
		if err != nil {
			panic(err) // the document is built from our own types: a bug
		}
		docJSON = append(b, '\n')
	})
	return docJSON
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIJSON())
}
