package remote

import (
	"strings"

	"github.com/sessiongateway/gateway/addressing"
)

// maxAliasName bounds a derived alias name; local legs show it as a
// session name, and titles can be long sentences.
const maxAliasName = 40

// slug derives an alias name from a session title: lower case, runs of
// anything but letters and digits folded into one '-', trimmed, cut at
// maxAliasName. "Fix the flaky test!" becomes "fix-the-flaky-test".
func slug(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
		if b.Len() >= maxAliasName {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}

// validAliasName accepts a name given with --remote-alias.
func validAliasName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// aliasNames names every listed session: fixed names first, then slugs of
// titles, a title-less or clashing one suffixed with its ref so that no two
// remote sessions share an alias.
func aliasNames(listed []RemoteSession, fixed map[string]string) map[string]string {
	names := make(map[string]string, len(listed))
	taken := map[string]bool{}
	for id, name := range fixed {
		names[id] = name
		taken[strings.ToLower(name)] = true
	}
	for _, rs := range listed {
		if _, ok := names[rs.ID]; ok {
			continue
		}
		name := slug(rs.Title)
		if name == "" {
			name = "remote"
		}
		if taken[name] || name == "remote" {
			name += "-" + addressing.Ref(rs.ID)
		}
		names[rs.ID] = name
		taken[name] = true
	}
	return names
}

// aliasName is the alias name of session id.
func (l *Leg) aliasName(id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, ok := l.names[id]; ok {
		return n
	}
	if n, ok := l.cfg.Aliases[id]; ok {
		return n
	}
	return "remote-" + addressing.Ref(id)
}
