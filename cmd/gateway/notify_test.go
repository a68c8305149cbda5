package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/notify"
)

func TestAHeldMessageNotifiesAndItsButtonReleasesItOnce(t *testing.T) {
	var mu sync.Mutex
	var got []notify.Notification
	var sigs []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var nt notify.Notification
		_ = json.Unmarshal(b, &nt)
		mu.Lock()
		got, sigs = append(got, nt), append(sigs, r.Header.Get(notify.SignatureHeader))
		mu.Unlock()
	}))
	defer hook.Close()
	root := t.TempDir()
	secret := filepath.Join(root, "notify-secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startBinary(t, root, "--api", "127.0.0.1:0", "--notify", hook.URL+"/hook", "--notify-secret-file", secret)
	fk := newFake(t, g, "work-08", message.ModePrompting)
	id, err := fk.Send(ctxT(t), gatewayAddress(t, g), "hold me", message.ModeBypass)
	if err != nil {
		t.Fatal(err)
	}
	var nt notify.Notification
	testutil.Eventually(t, "the webhook hears of the held message", func() bool {
		mu.Lock()
		defer mu.Unlock()
		if len(got) == 1 {
			nt = got[0]
		}
		return len(got) == 1
	})
	mu.Lock()
	signed := strings.HasPrefix(sigs[0], "sha256=")
	mu.Unlock()
	if nt.Kind != notify.KindHeld || nt.ID != id || len(nt.Actions) != 2 || nt.Actions[0].Label != "Release" || !signed {
		t.Fatalf("notified %+v (signed %v)", nt, signed)
	}
	get := func(link string) int {
		res, err := http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := get(nt.Actions[0].URL); code != http.StatusOK {
		t.Fatalf("release: %d", code)
	}
	if _, err := fk.WaitControl(ctxT(t), func(f claude.Frame) bool { return f.OrigMsgID == id && f.Status == claude.WireDelivered }); err != nil {
		t.Fatalf("no delivered receipt: %v", err)
	}
	if code := get(nt.Actions[0].URL); code != http.StatusGone {
		t.Fatalf("replayed: %d", code)
	}
	counted := map[string]float64{}
	for _, m := range scrape(t, g)["gateway_notifications_total"].GetMetric() {
		counted[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
	}
	if counted["sent"] != 1 || counted["action_done"] != 1 || counted["action_refused"] != 1 {
		t.Fatalf("gateway_notifications_total: %v", counted)
	}
}

func TestNotifyTargetsComeFromTheFlagOrGATEWAY_NOTIFY(t *testing.T) {
	dir := t.TempDir()
	plan, stderr := setup(t, map[string]string{"GATEWAY_STATE_DIR": dir, "GATEWAY_NOTIFY": "https://hooks.example/a, ntfy://ntfy.sh/alerts"})
	if plan == nil || strings.Join(plan.cfg.notify.Targets(), " ") != "https://hooks.example/a ntfy://ntfy.sh/alerts" {
		t.Fatalf("from the variable: %+v %s", plan, stderr)
	}
	plan, stderr = setup(t, map[string]string{"GATEWAY_STATE_DIR": dir}, "--notify", "https://hooks.example/a", "--notify", "ntfy:http://127.0.0.1:1/t")
	if plan == nil || len(plan.cfg.notify.Targets()) != 2 {
		t.Fatalf("from the flags: %s", stderr)
	}
	if plan, stderr = setup(t, map[string]string{"GATEWAY_STATE_DIR": dir}, "--notify", "ftp://x/y"); plan != nil || !strings.Contains(stderr, "--notify") {
		t.Fatalf("a bad target: %s", stderr)
	}
	if plan, stderr = setup(t, map[string]string{"GATEWAY_STATE_DIR": dir}, "--notify", "https://h.example/", "--notify-secret-file", filepath.Join(dir, "none")); plan != nil || !strings.Contains(stderr, "--notify-secret-file") {
		t.Fatalf("a missing secret file: %s", stderr)
	}
}
