package remote_test

import (
	"testing"

	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/remote"
)

// The router keeps a bridge:<id> naming a local session's bridgeSessionId
// off the remote leg's own sessions only because the leg says what they
// are.
func TestTheRemoteLegDeclaresItsSessionsAreTheClouds(t *testing.T) {
	if got := leg.AbilitiesOf(&remote.Leg{}); got != (leg.Abilities{CloudSessions: true}) {
		t.Fatalf("the remote leg declares %+v", got)
	}
}
