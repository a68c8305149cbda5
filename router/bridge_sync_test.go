package router

import (
	"context"
	"sync"
	"testing"

	"github.com/sessiongateway/gateway/message"
)

type listingHost struct {
	*hostLeg
	aliases []message.Session
	smu     sync.Mutex
	synced  [][]message.Session
}

func (l *listingHost) Aliases() []message.Session { return l.aliases }
func (l *listingHost) SyncAliases(_ context.Context, ss []message.Session) error {
	l.smu.Lock()
	defer l.smu.Unlock()
	l.synced = append(l.synced, ss)
	return nil
}

// Aliases of local sessions stay out of Sessions; remote ones are listed.
func TestLocalAliasesAreNotListed(t *testing.T) {
	cl := &listingHost{hostLeg: &hostLeg{fakeLeg: claudeLeg(claudeWork)}, aliases: []message.Session{
		{Address: "uds:/tmp/cc-socks/40.sock", Protocol: message.ProtocolClaude, Name: "alpha", Kind: AliasKind, AliasOf: alpha.Address},
		{Address: "uds:/tmp/cc-socks/41.sock", Protocol: message.ProtocolClaude, Name: "far", Kind: AliasKind, AliasOf: "bridge:session_01"},
	}}
	r := New(Config{}, cl)
	ss := r.Sessions(context.Background())
	if len(ss) != 2 {
		t.Fatalf("listed %+v; want the session and the remote alias only", ss)
	}
}

// Another gateway's aliases are not aliased again.
func TestAnotherGatewaysAliasesAreNotReAliased(t *testing.T) {
	foreign := message.Session{Address: "uds:/tmp/qwen-socks-x/90.sock", Protocol: message.ProtocolQwen, Name: "echo", SessionID: "q-echo", Kind: AliasKind}
	cl := &listingHost{hostLeg: &hostLeg{fakeLeg: claudeLeg(claudeWork)}}
	qw := &hostLeg{fakeLeg: qwenLeg(qwenWork, foreign)}
	r := New(Config{Bridge: true}, cl, qw)
	r.syncOnce(context.Background())
	for _, s := range cl.synced[0] {
		if s.Name == "echo" {
			t.Fatalf("published an alias of another gateway's alias: %+v", cl.synced[0])
		}
	}
}
