package claude

import "github.com/sessiongateway/gateway/transport/uds"

// The leg's time source is the shared one (see uds.Clock).
type (
	Stopper   = uds.Stopper
	Clock     = uds.Clock
	RealClock = uds.RealClock
)
