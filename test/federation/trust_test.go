package federation

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/federation"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeqwen"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// keygen runs `gateway federation keygen` in w and returns the public key
// it prints; serve signs with that key.
func keygen(t *testing.T, w *gatewaytest.World) string {
	t.Helper()
	cmd := exec.Command(gatewaytest.Bin(t), "federation", "keygen")
	cmd.Env = w.Env()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("keygen: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func TestAHostWithATrustFileTakesMessagesOnlyFromTheHostsItLists(t *testing.T) {
	c := cluster(t)
	wa, wb, wc := gatewaytest.NewWorld(t), gatewaytest.NewWorld(t), gatewaytest.NewWorld(t)
	keygen(t, wa)
	trust := testutil.WriteFile(t, filepath.Join(wb.Root, "trust"), []byte("# only c\nc "+keygen(t, wc)+"\n"), 0o600)
	a := &host{Name: "a", URLs: c.URLs(), W: wa}
	b := &host{Name: "b", URLs: c.URLs(), W: wb, args: []string{"--federation-trust", trust}}
	cc := &host{Name: "c", URLs: c.URLs(), W: wc}
	for _, h := range []*host{a, b, cc} {
		h.start(t)
	}
	bob := b.qwen(t, fakeqwen.Config{Name: "bob"})
	a.waitListed(t, "bob.b")
	cc.waitListed(t, "bob.b")

	// a's message is stored for b, and dropped there: b does not trust a's key.
	if _, code, err := a.G.Run(t, "send", "bob@b", "from a"); err != nil || code != 0 {
		t.Fatalf("a's send: exit %d, %v", code, err)
	}
	if o, code := cc.G.SendJSON(t, "bob@b", "from c", "--wait", "--timeout", "30s"); code != 0 || o.Status != message.StatusDelivered {
		t.Fatalf("c's send: exit %d, %+v", code, o)
	}
	ev, err := bob.Wait(t.Context(), 10*time.Second, func(ev message.Event) bool { return ev.Message != nil })
	if err != nil || ev.Message.Body != "from c" {
		t.Fatalf("bob got %+v, %v; want c's message alone", ev.Message, err)
	}
	out, _, err := b.G.Run(t, "federation", "status", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var st federation.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Drops["untrusted"] == 0 {
		t.Fatalf("b's status: %v\n%s", err, out)
	}
	if _, err := bob.Wait(t.Context(), time.Second, func(ev message.Event) bool { return ev.Message != nil }); err == nil {
		t.Fatal("bob got another message")
	}
}
