package api

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
)

// Scope is one kind of access a bearer token grants on TCP.
type Scope uint8

// The scopes. Read covers every GET (and the event stream); send covers
// what speaks for the user to other sessions (messages, idle
// subscriptions); approve covers what lets something through a gate: answering
// permission prompts, releasing or denying held inbound messages, and
// control requests (interrupt, permission mode, model); files covers
// attaching files to a message (with send), which reads them from the
// files directory.
const (
	ScopeRead Scope = iota + 1
	ScopeSend
	ScopeApprove
	ScopeFiles
)

// lastScope is the highest scope, for loops over all of them.
const lastScope = ScopeFiles

var scopeWire = [...]string{ScopeRead: "read", ScopeSend: "send", ScopeApprove: "approve", ScopeFiles: "files"}

func (s Scope) String() string {
	if int(s) < len(scopeWire) && scopeWire[s] != "" {
		return scopeWire[s]
	}
	return fmt.Sprintf("scope(%d)", uint8(s))
}

// Scopes is a set of scopes.
type Scopes uint8

// AllScopes is what the default token in <state-dir>/api-token and the
// Unix socket grant.
const AllScopes = Scopes(1<<ScopeRead | 1<<ScopeSend | 1<<ScopeApprove | 1<<ScopeFiles)

// Has reports whether s holds sc.
func (s Scopes) Has(sc Scope) bool { return s&(1<<sc) != 0 }

// String is the comma-separated wire spelling, in a fixed order.
func (s Scopes) String() string {
	var names []string
	for sc := ScopeRead; sc <= lastScope; sc++ {
		if s.Has(sc) {
			names = append(names, sc.String())
		}
	}
	return strings.Join(names, ",")
}

// ParseScopes reads "read,send,approve,files" (any subset, any order).
func ParseScopes(raw string) (Scopes, error) {
	var out Scopes
	for _, part := range strings.Split(raw, ",") {
		part = strings.TrimSpace(part)
		found := false
		for sc := ScopeRead; sc <= lastScope; sc++ {
			if scopeWire[sc] == part {
				out |= 1 << sc
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown scope %q: want read, send, approve or files", part)
		}
	}
	return out, nil
}

// Token is a bearer secret: slog prints it as [redacted], always.
type Token string

// LogValue keeps the token out of logs.
func (Token) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// Grant is who a request on TCP authenticated as.
type Grant struct {
	ID     string // "default" for <state-dir>/api-token
	Label  string
	Scopes Scopes
}

// TokenStore resolves a presented bearer token to its grant. It compares
// in constant time and must not log the token.
type TokenStore interface {
	Verify(token string) (Grant, bool)
}

type grantKey struct{}

func withGrant(ctx context.Context, g Grant) context.Context {
	return context.WithValue(ctx, grantKey{}, g)
}

// GrantFrom returns the grant a request authenticated as.
func GrantFrom(ctx context.Context) (Grant, bool) {
	g, ok := ctx.Value(grantKey{}).(Grant)
	return g, ok
}

// authenticate resolves the Authorization header: the default token first,
// then the store.
func (s *Server) authenticate(r *http.Request) (Grant, bool) {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || got == "" {
		return Grant{}, false
	}
	return s.verifyToken(got)
}

func (s *Server) verifyToken(tok string) (Grant, bool) {
	if s.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) == 1 {
		return Grant{ID: "default", Label: "api-token", Scopes: AllScopes}, true
	}
	if s.cfg.Tokens != nil {
		return s.cfg.Tokens.Verify(tok)
	}
	return Grant{}, false
}

// requireScope guards one route: a request whose grant lacks the route's
// scope gets 403 naming it. A request with no grant at all never reached
// here through a listener, so it is refused too (fail closed).
func requireScope(sc Scope, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g, ok := GrantFrom(r.Context())
		if !ok || !g.Scopes.Has(sc) {
			writeError(w, Error{Error: fmt.Sprintf("this token lacks the %q scope (gateway tokens add --scope %s)", sc, sc), Code: CodeForbidden, MissingScope: sc.String()})
			return
		}
		next.ServeHTTP(w, r)
	})
}
