package legtest

import (
	"context"
	"fmt"
	"time"

	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// Ability is one of the leg abilities that change how the router treats a
// leg, switched on for a Fake with With. A router finds an ability by the
// methods a leg has, so each set of them is a type of its own.
type Ability uint8

const (
	// Settles makes the fake a leg.Settler answering SettleAfter.
	Settles Ability = 1 << iota
	// CarriesFiles makes it a leg.FileCarrier.
	CarriesFiles
	// HostsAliases makes it a leg.AliasHost recording what it is synced,
	// sent as (answered by OnSendAs) and relayed.
	HostsAliases
	// Holds makes it a leg.Holder of what Hold added, deciding with
	// OnDecide.
	Holds
	// CountsNotices makes it count the notices it lost (NoticesLost, as
	// the router's metrics ask a leg with leg.Emitter), answering
	// LostNotices.
	CountsNotices
)

// With returns f with abilities switched on, as the router is to see it;
// f still records what the returned leg is sent and asked.
func (f *Fake) With(abilities Ability) leg.Leg {
	switch abilities {
	case 0:
		return f
	case Settles:
		return struct {
			*Fake
			settles
		}{f, settles{f}}
	case CarriesFiles:
		return struct {
			*Fake
			carries
		}{f, carries{}}
	case Settles | CarriesFiles:
		return struct {
			*Fake
			settles
			carries
		}{f, settles{f}, carries{}}
	case HostsAliases:
		return struct {
			*Fake
			hosts
		}{f, hosts{f}}
	case Settles | HostsAliases:
		return struct {
			*Fake
			settles
			hosts
		}{f, settles{f}, hosts{f}}
	case CarriesFiles | HostsAliases:
		return struct {
			*Fake
			carries
			hosts
		}{f, carries{}, hosts{f}}
	case Settles | CarriesFiles | HostsAliases:
		return struct {
			*Fake
			settles
			carries
			hosts
		}{f, settles{f}, carries{}, hosts{f}}
	case Holds:
		return struct {
			*Fake
			holds
		}{f, holds{f}}
	case Settles | Holds:
		return struct {
			*Fake
			settles
			holds
		}{f, settles{f}, holds{f}}
	case CarriesFiles | Holds:
		return struct {
			*Fake
			carries
			holds
		}{f, carries{}, holds{f}}
	case Settles | CarriesFiles | Holds:
		return struct {
			*Fake
			settles
			carries
			holds
		}{f, settles{f}, carries{}, holds{f}}
	case HostsAliases | Holds:
		return struct {
			*Fake
			hosts
			holds
		}{f, hosts{f}, holds{f}}
	case Settles | HostsAliases | Holds:
		return struct {
			*Fake
			settles
			hosts
			holds
		}{f, settles{f}, hosts{f}, holds{f}}
	case CarriesFiles | HostsAliases | Holds:
		return struct {
			*Fake
			carries
			hosts
			holds
		}{f, carries{}, hosts{f}, holds{f}}
	case Settles | CarriesFiles | HostsAliases | Holds:
		return struct {
			*Fake
			settles
			carries
			hosts
			holds
		}{f, settles{f}, carries{}, hosts{f}, holds{f}}
	case CountsNotices:
		return struct {
			*Fake
			counts
		}{f, counts{f}}
	case Settles | CountsNotices:
		return struct {
			*Fake
			settles
			counts
		}{f, settles{f}, counts{f}}
	case CarriesFiles | CountsNotices:
		return struct {
			*Fake
			carries
			counts
		}{f, carries{}, counts{f}}
	case Settles | CarriesFiles | CountsNotices:
		return struct {
			*Fake
			settles
			carries
			counts
		}{f, settles{f}, carries{}, counts{f}}
	case HostsAliases | CountsNotices:
		return struct {
			*Fake
			hosts
			counts
		}{f, hosts{f}, counts{f}}
	case Settles | HostsAliases | CountsNotices:
		return struct {
			*Fake
			settles
			hosts
			counts
		}{f, settles{f}, hosts{f}, counts{f}}
	case CarriesFiles | HostsAliases | CountsNotices:
		return struct {
			*Fake
			carries
			hosts
			counts
		}{f, carries{}, hosts{f}, counts{f}}
	case Settles | CarriesFiles | HostsAliases | CountsNotices:
		return struct {
			*Fake
			settles
			carries
			hosts
			counts
		}{f, settles{f}, carries{}, hosts{f}, counts{f}}
	case Holds | CountsNotices:
		return struct {
			*Fake
			holds
			counts
		}{f, holds{f}, counts{f}}
	case Settles | Holds | CountsNotices:
		return struct {
			*Fake
			settles
			holds
			counts
		}{f, settles{f}, holds{f}, counts{f}}
	case CarriesFiles | Holds | CountsNotices:
		return struct {
			*Fake
			carries
			holds
			counts
		}{f, carries{}, holds{f}, counts{f}}
	case Settles | CarriesFiles | Holds | CountsNotices:
		return struct {
			*Fake
			settles
			carries
			holds
			counts
		}{f, settles{f}, carries{}, holds{f}, counts{f}}
	case HostsAliases | Holds | CountsNotices:
		return struct {
			*Fake
			hosts
			holds
			counts
		}{f, hosts{f}, holds{f}, counts{f}}
	case Settles | HostsAliases | Holds | CountsNotices:
		return struct {
			*Fake
			settles
			hosts
			holds
			counts
		}{f, settles{f}, hosts{f}, holds{f}, counts{f}}
	case CarriesFiles | HostsAliases | Holds | CountsNotices:
		return struct {
			*Fake
			carries
			hosts
			holds
			counts
		}{f, carries{}, hosts{f}, holds{f}, counts{f}}
	case Settles | CarriesFiles | HostsAliases | Holds | CountsNotices:
		return struct {
			*Fake
			settles
			carries
			hosts
			holds
			counts
		}{f, settles{f}, carries{}, hosts{f}, holds{f}, counts{f}}
	}
	panic(fmt.Sprintf("legtest: no fake with abilities %b", abilities))
}

type settles struct{ f *Fake }

func (s settles) Settle() time.Duration { return s.f.SettleAfter }

type carries struct{}

func (carries) CarriesFiles() {}

type hosts struct{ f *Fake }

func (h hosts) SyncAliases(_ context.Context, others []message.Session) error {
	h.f.syncAliases(others)
	return nil
}

func (h hosts) SendAs(ctx context.Context, sender message.Session, m message.Message) (message.Receipt, error) {
	return h.f.sendAs(ctx, sender, m)
}

func (h hosts) Relay(_ context.Context, _ message.Message, rc message.Receipt) { h.f.relay(rc) }

type holds struct{ f *Fake }

func (h holds) Held() []message.Held { return h.f.heldList() }

func (h holds) Decide(ctx context.Context, id string, release bool, reason string) error {
	return h.f.decide(ctx, id, release, reason)
}

type counts struct{ f *Fake }

func (c counts) NoticesLost() uint64 { return c.f.LostNotices }
