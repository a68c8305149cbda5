package qwen_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeqwen"
)

// The Qwen leg keeps the Leg contract, with one fake Qwen Code session
// registered beside it.
func TestQwenLegKeepsTheLegContract(t *testing.T) {
	legtest.Run(t, func(t *testing.T) legtest.Subject {
		home, runtime := t.TempDir(), testutil.ShortTempDir(t)
		session := fakeqwen.Start(t, fakeqwen.Config{Name: "work-legtest", Home: home, RuntimeDir: runtime})
		p, err := qwen.Register(qwen.Config{Home: home, RuntimeDir: runtime, TmpDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		return legtest.Subject{Leg: p, Inbound: func(t *testing.T) {
			n++
			m := message.Message{ID: fmt.Sprintf("legtest-in-%d", n), To: addressing.UDS(p.SocketPath()), Body: "hello", Mode: message.ModePrompting}
			if rc, err := session.Send(testutil.Context(t, 10*time.Second), m); err != nil || rc.Status == message.StatusFailed {
				t.Fatalf("the session's send to the leg: %+v, %v", rc, err)
			}
		}}
	})
}
