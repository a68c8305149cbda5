package abuse

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// blackHole is a loopback listener that accepts every connection and never
// answers on it: a cloud API that has gone dark without refusing.
func blackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// localCeiling bounds one local send by name or one listing while the
// cloud is black-holed. The gateway answers such calls from what it
// already knows (a few milliseconds); before the fix each waited on the
// remote listing for 6-8 s. The margin is for a loaded 2-core machine.
const localCeiling = time.Second

// TestCloudBlackHoleDoesNotSlowLocalRouting: with the remote leg's API
// accepting connections and never answering, a local send by name and the
// session list answer within localCeiling, each call timed on its own.
func TestCloudBlackHoleDoesNotSlowLocalRouting(t *testing.T) {
	w := gatewaytest.NewWorld(t)
	tokenFile := filepath.Join(w.Root, "cloud-token")
	if err := os.WriteFile(tokenFile, []byte("test-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := gatewaytest.Start(t, w, "gateway", "--legs", "claude,remote", "--settle", "200ms",
		"--remote-url", blackHole(t), "--remote-org", "00000000-0000-4000-8000-000000000000",
		"--remote-token-file", tokenFile, "--remote-follow", "all")
	fakeclaude.Start(t, fakeclaude.Config{Name: "work-08", ConfigDir: w.ConfigDir, RuntimeDir: w.Runtime, Mode: message.ModePrompting})

	var worst time.Duration
	for i := range 3 {
		ctx := testutil.Context(t, 30*time.Second)
		start := time.Now()
		ss, err := g.Sessions(ctx)
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		worst = max(worst, took)
		if _, ok := gatewaytest.FindSession(ss, "work-08"); !ok && i > 0 {
			t.Errorf("listing %d: work-08 not listed: %+v", i, ss)
		}
		if took > localCeiling {
			t.Errorf("listing %d took %v, want under %v", i, took, localCeiling)
		}

		start = time.Now()
		out, err := g.Send(ctx, api.SendBody{To: "work-08", Text: fmt.Sprintf("hello %d while the cloud is dark", i)})
		took = time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		worst = max(worst, took)
		if out.Status != message.StatusSent && out.Status != message.StatusDelivered {
			t.Errorf("send %d: status %v, want sent", i, out.Status)
		}
		if took > localCeiling {
			t.Errorf("send %d by name took %v, want under %v", i, took, localCeiling)
		}
	}
	t.Logf("slowest local call with the cloud black-holed: %v", worst)
}
