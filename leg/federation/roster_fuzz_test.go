package federation

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/message"
)

// kvEntry is a roster bucket's update as the watch hands it over: only
// what heard reads is set.
type kvEntry struct {
	jetstream.KeyValueEntry
	key     string
	value   []byte
	op      jetstream.KeyValueOp
	created time.Time
}

func (e kvEntry) Key() string                     { return e.key }
func (e kvEntry) Value() []byte                   { return e.value }
func (e kvEntry) Operation() jetstream.KeyValueOp { return e.op }
func (e kvEntry) Created() time.Time              { return e.created }

// FuzzRosterEntry: whatever another host puts in the roster bucket under
// whatever key, hearing it never panics; an entry is kept only under a
// valid host name other than this one, its own, with at most maxSessions;
// and every session listed from it is that host's, addressed NAME@HOST.
func FuzzRosterEntry(f *testing.F) {
	sg := testSigner(f)
	signed := func(host string, ss ...message.Session) []byte {
		r := rosterEntry{V: Version, Host: host, Sessions: ss}
		b, err := sg.sign(domainRoster, &r, &r.seal)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	f.Add("h", signed("h", session("work", "s-1", message.ProtocolClaude), session("review", "s-2", message.ProtocolQwen)))
	f.Add("h", signed("h", session("", "s-3", message.ProtocolClaude), session("a b", "s-4", message.ProtocolClaude),
		session("x@y", "s-5", message.ProtocolClaude), session("[ref]", "s-6", message.ProtocolClaude)))
	f.Add("h", signed("h"))
	f.Add("other", signed("h", session("work", "s-1", message.ProtocolClaude)))
	f.Add("self", signed("self", session("work", "s-1", message.ProtocolClaude)))
	f.Add("h", []byte(`{"v":1,"host":"h","sessions":[{"name":"work"}]}`))
	f.Add("h", []byte(`{"v":2,"host":"h"}`))
	f.Add("H.x", []byte(`null`))
	f.Fuzz(func(t *testing.T, host string, b []byte) {
		n := testNode(t, "self")
		n.others = map[string]hostEntry{}
		n.heard(kvEntry{key: host, value: b, op: jetstream.KeyValuePut, created: time.Now()})
		if h, ok := n.others[host]; ok {
			if host == "self" || !ValidHost(host) || len(h.sessions) > maxSessions {
				t.Fatalf("kept an entry under %q of %d sessions", host, len(h.sessions))
			}
		}
		if len(n.others) > 1 || (len(n.others) == 1 && n.others[host].seen.IsZero()) {
			t.Fatalf("one update left %d entries", len(n.others))
		}
		for _, s := range n.Sessions() {
			a, err := addressing.Parse(s.Address)
			if s.Host != host || s.Protocol != message.ProtocolFederation || s.PID != 0 || s.AliasOf != "" ||
				err != nil || a.Kind != addressing.KindName || s.Address != a.String() ||
				!strings.HasSuffix(s.Address, "@"+host) || s.Name == "."+host || !strings.HasSuffix(s.Name, "."+host) {
				t.Fatalf("listed %+v from host %q (%v)", s, host, err)
			}
			if o, ok := n.Origin(s.Address, s.SessionID); !ok || o.Host != host {
				t.Fatalf("%s has no origin: %+v", s.Address, o)
			}
		}
		// A delete under the same key forgets it.
		n.heard(kvEntry{key: host, op: jetstream.KeyValueDelete})
		if len(n.Sessions()) != 0 {
			t.Fatalf("a delete of %q left sessions listed", host)
		}
	})
}
