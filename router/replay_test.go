package router

import (
	"errors"
	"testing"

	"github.com/sessiongateway/gateway/message"
)

func TestReplayAnswersWhatTheRouterOrAKeepingLegKnowsAndSendsNothing(t *testing.T) {
	// The leg keeps what it took, as a durable outbox does.
	kept := map[string]message.Receipt{"m-kept": {MsgID: "m-kept", Status: message.StatusDelivered}}
	leg := newFake()
	leg.OnRecall = func(id string) (message.Message, message.Receipt, bool) {
		rc, ok := kept[id]
		return message.Message{ID: id, To: "uds:/tmp/cc-socks/12.sock", Protocol: leg.Name()}, rc, ok
	}
	r := New(Config{}, leg) // a restarted router: it tracks nothing
	out, err := r.Replay("m-kept")
	if err != nil || out.Message.ID != "m-kept" || out.Status != message.StatusDelivered {
		t.Fatalf("Replay = %+v, %v; want m-kept delivered", out, err)
	}
	if got, err := r.Message("m-kept"); err != nil || got.Status != message.StatusDelivered {
		t.Fatalf("Message after the replay = %+v, %v; want it tracked again", got, err)
	}
	if _, err := r.Replay("m-gone"); !errors.Is(err, ErrUnknownMessage) {
		t.Fatalf("Replay of a message nobody keeps: %v, want ErrUnknownMessage", err)
	}
	if len(leg.Sent()) != 0 {
		t.Fatalf("the leg was asked to send %d times, want none", len(leg.Sent()))
	}
}
