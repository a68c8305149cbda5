package outbox

import "github.com/sessiongateway/gateway/transport/uds"

// Clock is the time source of retries, their backoff and the age limit:
// the local legs' clock, so one fake (testkit/clock.FakeClock) drives both.
type Clock = uds.Clock

// Stopper cancels a pending AfterFunc.
type Stopper = uds.Stopper
