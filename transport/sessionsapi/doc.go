// Package sessionsapi is the REST client for the claude.ai Sessions API (the
// /v1/sessions and /v1/code/sessions endpoints of seeds 000 and 001). Its first
// part is the JCS (RFC 8785) canonicalisation that event payloads go through
// before they reach the auth.Signer boundary: Canonicalize wraps
// github.com/gowebpki/jcs and, before it runs, rejects what that library has
// accepted in the past or that RFC 8785 and I-JSON forbid (invalid UTF-8, lone
// or reversed surrogates, duplicate object names, nesting beyond MaxDepth), so
// that two implementations can never sign different bytes for one payload.
// It imports message and auth at most, never another transport.
package sessionsapi
