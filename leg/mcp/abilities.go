package mcp

import "github.com/sessiongateway/gateway/leg"

// Abilities: a client that just left is still answered for by name (its
// receipt says it left), and a client's own sends go out through the
// bridge, as from it, whether or not the bridge is on.
func (l *Leg) Abilities() leg.Abilities {
	return leg.Abilities{ClaimsLeftNames: true, BridgesOwnSends: true}
}
