// Package api is the gateway's control API: HTTP/JSON over the state
// directory's Unix socket (same user only, full access) and, optionally,
// TCP hardened for other machines: a Host allowlist, bearer tokens with
// scopes (read, send, approve, files; /healthz and /readyz need none), TLS 1.2+
// with certificates reloaded from their files, per-client rate limits,
// body, header and time limits, and CORS only for one configured origin.
// One route table builds both the mux and the OpenAPI 3.1 document served
// at /openapi.json. It also holds the Client the CLI uses. Handlers talk to
// the router only; of the legs the package imports leg/outbox alone, for
// the outbox's items, idempotency keys and errors, and it stores no tokens
// itself (a TokenStore resolves them).
package api
