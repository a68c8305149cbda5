package federation

import (
	"fmt"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
)

// The federation leg keeps the Leg contract on the shared cluster, with one
// session on another host; that session's receipt for a message the leg
// sent it is Run's event.
func TestFederationLegKeepsTheLegContract(t *testing.T) {
	c := sharedCluster(t)
	legtest.Run(t, func(t *testing.T) legtest.Subject {
		tag := randomID()[:6]
		here, there := join(t, c.url(0), "lt-a-"+tag), join(t, c.url(1), "lt-b-"+tag)
		serve(t, here, &peer{})
		serve(t, there, &peer{sessions: []message.Session{session("qwen-work", "s-lt-"+tag, message.ProtocolQwen)}})
		to := "qwen-work@" + there.Host()
		testutil.Eventually(t, "the other host's session is listed", func() bool {
			_, ok := here.Origin(to, "s-lt-"+tag)
			return ok
		})
		n := 0
		return legtest.Subject{Leg: here.Leg(), Unknown: "nobody@" + there.Host(), Foreign: []string{"github.com/nats-io/"}, Inbound: func(t *testing.T) {
			n++
			m := message.Message{ID: fmt.Sprintf("m-lt-%s-%d", tag, n), To: to, FromName: "alice", Body: "hello", Time: time.Now()}
			if rc, err := here.Leg().Send(testutil.Context(t, 20*time.Second), m); err != nil || rc.Status == message.StatusFailed {
				t.Fatalf("send = %+v, %v", rc, err)
			}
		}}
	})
}
