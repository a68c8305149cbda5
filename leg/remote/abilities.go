package remote

import "github.com/sessiongateway/gateway/leg"

// Abilities: claude.ai's own sessions, never the local session a
// bridge:<id> reaches over its socket.
func (l *Leg) Abilities() leg.Abilities { return leg.Abilities{CloudSessions: true} }
