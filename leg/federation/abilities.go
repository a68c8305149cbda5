package federation

import "github.com/sessiongateway/gateway/leg"

// Abilities: other hosts' sessions, named NAME.HOST, resolved after local
// ones; a prompt withdrawn while its host was unreachable is raised again
// when that host lists it pending.
func (l *Leg) Abilities() leg.Abilities {
	return leg.Abilities{OtherHosts: true, ReraisesCancelled: true}
}
