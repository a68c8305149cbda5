package abuse

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/router"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// postKeyed sends b on the gateway's control socket with an
// Idempotency-Key, as a client that will retry does.
func postKeyed(t *testing.T, w *gatewaytest.World, b api.SendBody, key string) (*http.Response, router.Outbound) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", w.Socket())
		}}}
	body, _ := json.Marshal(b)
	req, _ := http.NewRequest("POST", "http://gateway/v1/messages", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(api.IdempotencyHeader, key)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out router.Outbound
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp, out
}

// TestARetryAfterAKillIsNotADuplicate: a client's send to a remote session
// is accepted, the gateway is killed with SIGKILL before the client hears
// the answer, and the client retries with the same Idempotency-Key against
// the restarted gateway. The cloud gets the message once.
func TestARetryAfterAKillIsNotADuplicate(t *testing.T) {
	const token, org = "tok-abuse-0123456789", "7b0c2f4e-1d2a-4c3b-9e8f-0a1b2c3d4e5f"
	cloud := fakecloud.Start(t, fakecloud.Options{Token: token, OrgUUID: org})
	sid := cloud.CreateSession("retry target")
	w := gatewaytest.NewWorld(t)
	tokenFile := filepath.Join(w.Root, "cloud-token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--legs", "remote", "--remote-url", cloud.URL(), "--remote-org", org,
		"--remote-token-file", tokenFile, "--remote-follow", sid}
	const text = "exactly once, whatever happens to the gateway"
	send := api.SendBody{To: "bridge:" + sid, Body: text}

	g := gatewaytest.Start(t, w, "gateway", args...)
	resp, first := postKeyed(t, w, send, "client-retry-1")
	if resp.StatusCode != http.StatusCreated || first.Message.ID == "" {
		t.Fatalf("first send: %d %+v", resp.StatusCode, first)
	}
	g.Kill(t) // the answer above stands for the one the client never heard

	g = gatewaytest.Start(t, w, "gateway", args...)
	resp, again := postKeyed(t, w, send, "client-retry-1")
	if resp.StatusCode != http.StatusCreated || again.Message.ID != first.Message.ID || resp.Header.Get(api.ReplayedHeader) != "true" {
		t.Fatalf("retry after the restart: %d %+v, want 201 with message %s replayed", resp.StatusCode, again, first.Message.ID)
	}
	posted := func() map[string]bool {
		uuids := map[string]bool{}
		for _, m := range cloud.Posted(sid) {
			if m.Type == "user" && m.User != nil && strings.Contains(m.User.Content.Text(), text) {
				uuids[m.UUID] = true
			}
		}
		return uuids
	}
	ctx := testutil.Context(t, 20*time.Second)
	drained := func() bool {
		pending, err := g.Outbox(ctx, false)
		return err == nil && len(pending) == 0
	}
	// Everything accepted is in the outbox: once it holds nothing pending,
	// every post that will be made was made.
	testutil.EventuallyWithin(t, 20*time.Second, "the outbox drained and the cloud got the message", func() bool {
		return drained() && len(posted()) > 0
	})
	if n := len(posted()); n != 1 {
		t.Fatalf("the cloud got the message %d times (distinct event uuids), want once", n)
	}
	all, err := g.Outbox(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(all); n != 1 {
		t.Fatalf("the outbox took %d messages, want the one", n)
	}
	o, err := g.Message(ctx, first.Message.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("retry after kill -9: one message at the cloud, id %s, status %v", o.Message.ID, o.Status)
}
