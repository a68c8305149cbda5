package hosted

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
)

// The hosted leg keeps the Leg contract with one kept session, whose CLI
// (the stand-in) starts when Run runs; a turn sent to it is Run's event.
func TestHostedLegKeepsTheLegContract(t *testing.T) {
	legtest.Run(t, func(t *testing.T) legtest.Subject {
		state, cwd := t.TempDir(), t.TempDir()
		if err := os.Chmod(state, 0o700); err != nil {
			t.Fatal(err)
		}
		recs, _ := json.Marshal([]record{{Name: "suite", Agent: message.AgentClaude, Cwd: cwd, Created: time.Now()}})
		if err := os.WriteFile(filepath.Join(state, "hosted.json"), recs, 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := New(Config{StateDir: state, ClaudePath: fakeCLI(t, "claude")})
		if err != nil {
			t.Fatal(err)
		}
		return legtest.Subject{Leg: l, Unknown: AddressPrefix + "nobody", Inbound: func(t *testing.T) {
			if _, err := l.Send(context.Background(), message.Message{ID: "m-suite", To: AddressPrefix + "suite", Body: "hello"}); err != nil {
				t.Fatal(err)
			}
		}}
	})
}
