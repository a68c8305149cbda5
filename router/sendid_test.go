package router

import (
	"context"
	"testing"
)

func TestASendUnderAKnownIDSendsNothing(t *testing.T) {
	leg := newFake()
	r := New(Config{}, leg)
	first, err := r.Send(context.Background(), SendRequest{To: "review", Body: "hi", ID: "m-fixed"})
	if err != nil || first.Message.ID != "m-fixed" {
		t.Fatalf("Send = %+v, %v; want message m-fixed", first, err)
	}
	again, err := r.Send(context.Background(), SendRequest{To: "review", Body: "hi", ID: "m-fixed"})
	if err != nil || again.Message.ID != "m-fixed" || again.Status != first.Status {
		t.Fatalf("Send again = %+v, %v", again, err)
	}
	if len(leg.Sent()) != 1 {
		t.Fatalf("the leg was asked %d times, want once", len(leg.Sent()))
	}
}
