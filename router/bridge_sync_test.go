package router

import (
	"context"
	"testing"

	"github.com/sessiongateway/gateway/message"
)

// Aliases of local sessions stay out of Sessions; remote ones are listed.
func TestLocalAliasesAreNotListed(t *testing.T) {
	cl := claudeLeg(claudeWork)
	cl.SetAliases(
		message.Session{Address: "uds:/tmp/cc-socks/40.sock", Protocol: message.ProtocolClaude, Name: "alpha", Kind: AliasKind, AliasOf: alpha.Address},
		message.Session{Address: "uds:/tmp/cc-socks/41.sock", Protocol: message.ProtocolClaude, Name: "far", Kind: AliasKind, AliasOf: "bridge:session_01"},
	)
	r := New(Config{}, host(cl))
	ss := r.Sessions(context.Background())
	if len(ss) != 2 {
		t.Fatalf("listed %+v; want the session and the remote alias only", ss)
	}
}

// Another gateway's aliases are not aliased again.
func TestAnotherGatewaysAliasesAreNotReAliased(t *testing.T) {
	foreign := message.Session{Address: "uds:/tmp/qwen-socks-x/90.sock", Protocol: message.ProtocolQwen, Name: "echo", SessionID: "q-echo", Kind: AliasKind}
	cl := claudeLeg(claudeWork)
	qw := qwenLeg(qwenWork, foreign)
	r := New(Config{Bridge: true}, host(cl), host(qw))
	r.syncOnce(context.Background())
	for _, s := range cl.Synced()[0] {
		if s.Name == "echo" {
			t.Fatalf("published an alias of another gateway's alias: %+v", cl.Synced()[0])
		}
	}
}
