package approver

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// Every goroutine the approver starts is stopped by the end of Run.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// promptLeg is the shared remote fixture, with the two things these tests
// ask of it by name.
type promptLeg struct{ *legtest.PromptLeg }

func newPromptLeg() promptLeg { return promptLeg{legtest.NewPromptLeg()} }

func (l promptLeg) answered() []message.PermissionAnswer { return l.Answers() }

// feed sends evs from the leg and returns the permission events the router
// published for them. A session event after them marks the end: the router
// handles one leg event at a time, in order.
func (l promptLeg) feed(t *testing.T, r *router.Router, evs ...message.Event) []message.Event {
	t.Helper()
	<-l.Started()
	_, _, sub := r.Hub().Subscribe(-1)
	defer sub.Close()
	l.Raise(append(evs, message.Event{Type: message.EventSession})...)
	var got []message.Event
	for ev := range sub.C {
		switch ev.Type {
		case message.EventSession:
			return got
		case message.EventPermission:
			got = append(got, ev)
		}
	}
	t.Fatalf("subscription ended: %v", sub.Err())
	return nil
}
