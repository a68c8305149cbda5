package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// sendOverSocket sends to bridge:<bridgeID> with the CLI and waits for
// the fake Claude peer to receive it.
func sendOverSocket(t *testing.T, g *gatewaytest.Gateway, fk *fakeclaude.Peer, bridgeID string) {
	t.Helper()
	out, errOut, code := runCLI(t, g.StateDir, "sessions", "--json")
	var ss []message.Session
	if code != 0 || json.Unmarshal([]byte(out), &ss) != nil {
		t.Fatalf("sessions: exit %d: %s", code, errOut)
	}
	shown := false
	for _, s := range ss {
		shown = shown || s.Address == fk.Address() && s.BridgeSessionID == bridgeID
	}
	if !shown || !strings.Contains(out, `"bridge_session_id": "`+bridgeID+`"`) {
		t.Fatalf("sessions --json does not show the bridge id:\n%s", out)
	}
	out, errOut, code = runCLI(t, g.StateDir, "send", "bridge:"+bridgeID, "over the socket")
	id := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("send: exit %d: %s%s", code, out, errOut)
	}
	if _, err := fk.WaitReceived(ctxT(t), func(r fakeclaude.Received) bool { return r.Frame.MsgID == id }); err != nil {
		t.Fatalf("the local session never got it: %v", err)
	}
}

func TestABridgeIDOfALocalSessionIsDeliveredOverItsSocket(t *testing.T) {
	const bridgeID = "cse_01LocalBridgeSession"
	t.Run("with no cloud configured", func(t *testing.T) {
		g := startBinary(t, t.TempDir())
		fk := fakeclaude.Start(t, fakeclaude.Config{Name: "signed-in", ConfigDir: g.ConfigDir, RuntimeDir: g.Runtime, Mode: message.ModePrompting, BridgeSessionID: bridgeID})
		sendOverSocket(t, g, fk, bridgeID)
	})
	t.Run("with the cloud listing the same session, still over the socket", func(t *testing.T) {
		cloud := fakecloud.Start(t, fakecloud.Options{Token: e2eToken, OrgUUID: e2eOrg})
		sid := cloud.CreateSession("signed in")
		root := t.TempDir()
		tokenFile := filepath.Join(root, "token")
		if err := os.WriteFile(tokenFile, []byte(e2eToken+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		ro := &remoteOpts{url: cloud.URL(), org: e2eOrg, tokenFile: tokenFile, follow: multi{"all"}, transport: "ws"}
		if err := ro.check(); err != nil {
			t.Fatal(err)
		}
		g := startGateway(t, root, func(c *serveConfig) { c.noQwen, c.bridge, c.remote = true, false, ro })
		t.Cleanup(func() { g.Stop(t) })
		fk := fakeclaude.Start(t, fakeclaude.Config{Name: "signed-in", ConfigDir: g.ConfigDir, RuntimeDir: g.Runtime, Mode: message.ModePrompting, BridgeSessionID: sid})
		sendOverSocket(t, g, fk, sid)
		for _, m := range cloud.Posted(sid) {
			if m.Type == "user" {
				t.Fatalf("the message went to the cloud too: %s", m.Raw)
			}
		}
	})
}
