package federation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

func TestAnEmbeddedServerListensBeyondLoopbackOnlyWithAuthentication(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:0"} {
		_, err := Connect(testutil.Context(t, 10*time.Second), Config{URLs: Embedded, Host: "open", Listen: listen, StateDir: t.TempDir()})
		if !errors.Is(err, ErrOpenListen) {
			t.Fatalf("%s without authentication: %v", listen, err)
		}
	}
	// A configuration that authenticates every client lets it listen
	// anywhere; one that maps clients without credentials to a user does not.
	for body, want := range map[string]bool{
		`authorization { users: [ { nkey: "UDRAVSEYLMOKU66LKMKGZ5KGKGK6S5EGLUR7HSTY73WA3RE3UBN7NZAN" } ] }`: true,
		`authorization { user: u, password: p }`:                                                            true,
		`authorization { token: "s3cret" }`:                                                                 true,
		`authorization { users: [ { user: u, password: p } ] }` + "\nno_auth_user: u":                       false,
		`max_payload: 2MB`: false,
		`accounts { A { users: [ { nkey: "UDRAVSEYLMOKU66LKMKGZ5KGKGK6S5EGLUR7HSTY73WA3RE3UBN7NZAN" } ] } }`: true,
	} {
		o := &server.Options{}
		if err := o.ProcessConfigString(body); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if got := authenticates(o); got != want {
			t.Errorf("%s: authenticates = %v", body, got)
		}
	}
	// The documented permissions authenticate.
	o, err := server.ProcessConfigFile(filepath.Join("..", "..", "docs", "federation", "permissions.conf"))
	if err != nil || !authenticates(o) {
		t.Fatalf("docs/federation/permissions.conf: %v, %v", authenticates(o), err)
	}
}

func TestAnEmbeddedServerAdmitsOnlyTheGatewaysItsConfigurationNames(t *testing.T) {
	dir := t.TempDir()
	seed := func(name string) (string, string) {
		u, _ := nkeys.CreateUser()
		pub, _ := u.PublicKey()
		s, _ := u.Seed()
		return pub, testutil.WriteFile(t, filepath.Join(dir, name+".nk"), s, 0o600)
	}
	pubE, fileE := seed("e")
	pubJ, fileJ := seed("j")
	_, fileX := seed("stranger")
	conf := testutil.WriteFile(t, filepath.Join(dir, "server.conf"),
		fmt.Appendf(nil, "authorization { users: [ { nkey: %q }, { nkey: %q } ] }\n", pubE, pubJ), 0o600)

	e := join(t, Embedded, "emb-auth-e", func(c *Config) {
		c.Listen, c.StateDir, c.ServerConfig, c.NKeyFile = "127.0.0.1:0", t.TempDir(), conf, fileE
	})
	_, err := Connect(testutil.Context(t, 10*time.Second), Config{URLs: e.ClientURL(), Host: "emb-auth-x", RosterTTL: testTTL})
	if !errors.Is(err, ErrCredentials) {
		t.Fatalf("a gateway without credentials joined: %v", err)
	}
	_, err = Connect(testutil.Context(t, 10*time.Second), Config{URLs: e.ClientURL(), Host: "emb-auth-x", NKeyFile: fileX, RosterTTL: testTTL})
	if !errors.Is(err, ErrCredentials) {
		t.Fatalf("a stranger's key joined: %v", err)
	}
	j := join(t, e.ClientURL(), "emb-auth-j", func(c *Config) { c.NKeyFile = fileJ })
	pj := &peer{sessions: []message.Session{session("work", "s-w", message.ProtocolClaude)}}
	serve(t, e, &peer{})
	serve(t, j, pj)
	testutil.Eventually(t, "e lists work@emb-auth-j", func() bool { _, ok := e.Origin("work@emb-auth-j", ""); return ok })
	if rc, err := e.Leg().Send(testutil.Context(t, 10*time.Second), message.Message{ID: "emb-auth-1", To: "work@emb-auth-j", Body: "hi"}); err != nil || rc.Status != message.StatusSent {
		t.Fatalf("send: %+v, %v", rc, err)
	}
	testutil.Eventually(t, "j delivers it", func() bool { return len(pj.received()) == 1 })

	// A configuration others may write is refused: it decides who joins.
	if err := os.Chmod(conf, 0o666); err != nil {
		t.Fatal(err)
	}
	_, err = Connect(testutil.Context(t, 10*time.Second), Config{URLs: Embedded, Host: "emb-auth-y", Listen: "127.0.0.1:0", StateDir: t.TempDir(), ServerConfig: conf})
	if err == nil {
		t.Fatal("a world-writable server configuration was loaded")
	}
}
