// Package sessionsapi is the REST client for the claude.ai Sessions API: the
// /v1/sessions endpoints, events and environments the claude.ai web app uses
// and the /v1/code/sessions surface today's CLI uses
// (docs/protocols/claude-ai-remote.md#rest-sessions-api). A Client sends the
// anthropic-* headers, the organisation, OAuth bearer
// tokens from an oauth2.TokenSource (see package auth) or the web sessionKey
// cookie, and a W3C traceparent from OpenTelemetry; it retries with
// exponential backoff and jitter, honours Retry-After, refreshes a refused
// token once, and never retries a post the server may have acted on unless
// every event in it carries a stable uuid. Before an event is posted it is
// canonicalised with Canonicalize (RFC 8785 JCS via github.com/gowebpki/jcs,
// after our own refusal of invalid UTF-8, lone or reversed surrogates,
// duplicate names and nesting beyond MaxDepth, so that two implementations
// can never sign different bytes) and handed to the auth.Signer boundary;
// AttestationField documents where the attestation travels. It imports
// auth and internal packages only, never a leg.
package sessionsapi
