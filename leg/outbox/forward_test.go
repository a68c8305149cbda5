package outbox_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/leg/outbox"
	"github.com/sessiongateway/gateway/leg/remote"
	"github.com/sessiongateway/gateway/message"
)

// ableLeg is the shared fake with every ability the remote leg has, each
// recording that it was asked: the fake declares Prompter, Controllable
// and Waker for no test but this one.
type ableLeg struct {
	*legtest.Fake
	asked []string
	ready error
}

func (a *ableLeg) Claims(addressing.Address) bool { a.asked = append(a.asked, "claims"); return true }
func (a *ableLeg) Answer(context.Context, message.PermissionRequest, message.PermissionAnswer) error {
	a.asked = append(a.asked, "answer")
	return nil
}
func (a *ableLeg) Control(context.Context, message.Session, message.Control) (message.ControlResult, error) {
	a.asked = append(a.asked, "control")
	return message.ControlResult{}, nil
}
func (a *ableLeg) Wake(string)  { a.asked = append(a.asked, "wake") }
func (a *ableLeg) Ready() error { a.asked = append(a.asked, "ready"); return a.ready }

type abilities interface {
	Claims(addressing.Address) bool
	Answer(context.Context, message.PermissionRequest, message.PermissionAnswer) error
	Control(context.Context, message.Session, message.Control) (message.ControlResult, error)
	Wake(string)
	Ready() error
}

func controlErr(_ message.ControlResult, err error) error { return err }

func TestAbilitiesAreForwarded(t *testing.T) {
	ctx := context.Background()
	call := func(l abilities) []error {
		l.Claims(addressing.Address{Kind: addressing.KindBridge, ID: "s1"})
		l.Wake("s1")
		return []error{
			l.Answer(ctx, message.PermissionRequest{}, message.PermissionAnswer{Behavior: message.BehaviorAllow}),
			controlErr(l.Control(ctx, message.Session{Address: "bridge:s1"}, message.Control{Kind: message.ControlInterrupt})),
			l.Ready(),
		}
	}
	t.Run("each ability reaches an inner leg that has it", func(t *testing.T) {
		base := newInner(sent)
		inner := &ableLeg{Fake: base.fake}
		h := newHarness(t, stateDir(t), base, outbox.Options{}, outbox.Config{})
		leg, err := outbox.New(inner, outbox.Config{Store: h.store})
		if err != nil {
			t.Fatal(err)
		}
		if !leg.Claims(addressing.Address{Kind: addressing.KindBridge, ID: "x"}) {
			t.Error("Claims did not give the inner leg's answer")
		}
		inner.asked = nil
		for _, err := range call(leg) {
			if err != nil {
				t.Errorf("forwarded call failed: %v", err)
			}
		}
		want := []string{"claims", "wake", "answer", "control", "ready"}
		if !reflect.DeepEqual(inner.asked, want) {
			t.Fatalf("inner leg asked %v, want %v", inner.asked, want)
		}
		inner.ready = errors.New("session list not fetched yet")
		if err := leg.Ready(); !errors.Is(err, inner.ready) {
			t.Fatalf("Ready = %v, want the inner leg's", err)
		}
	})
	t.Run("an inner leg without them refuses as the router expects", func(t *testing.T) {
		h := newHarness(t, stateDir(t), newInner(sent), outbox.Options{}, outbox.Config{})
		if h.leg.Claims(addressing.Address{Kind: addressing.KindBridge, ID: "x"}) {
			t.Error("claimed an address for a leg that claims none")
		}
		errs := call(h.leg)
		if !errors.Is(errs[0], message.ErrNotPrompter) || !errors.Is(errs[1], message.ErrNotControllable) || errs[2] != nil {
			t.Fatalf("errors %v", errs)
		}
	})
}

// The router looks for these by type assertion; the wrapper
// must offer exactly those the remote leg offers, no fewer (a prompt could
// not be answered) and no more (an AliasHost would change how the bridge
// sends to it).
func TestTheWrapperOffersExactlyTheRemoteLegsAbilities(t *testing.T) {
	abilities := map[string]reflect.Type{
		"Claimer":        reflect.TypeFor[leg.Claimer](),
		"Settler":        reflect.TypeFor[leg.Settler](),
		"Holder":         reflect.TypeFor[leg.Holder](),
		"IdleSubscriber": reflect.TypeFor[leg.IdleSubscriber](),
		"AliasHost":      reflect.TypeFor[leg.AliasHost](),
		"Prompter":       reflect.TypeFor[leg.Prompter](),
		"Controllable":   reflect.TypeFor[leg.Controllable](),
		"Describer":      reflect.TypeFor[leg.Describer](),
		"Readier":        reflect.TypeFor[leg.Readier](),
		"Waker":          reflect.TypeFor[leg.Waker](),
		"Lifecycler":     reflect.TypeFor[leg.Lifecycler](),
		"FileCarrier":    reflect.TypeFor[leg.FileCarrier](),
		"Declarer":       reflect.TypeFor[leg.Declarer](),
	}
	remote, wrapper := reflect.TypeFor[*remote.Leg](), reflect.TypeFor[*outbox.Leg]()
	var _ leg.Leg = (*outbox.Leg)(nil)
	for name, iface := range abilities {
		if r, w := remote.Implements(iface), wrapper.Implements(iface); r != w {
			t.Errorf("%s: the remote leg has it: %v, the outbox wrapper: %v", name, r, w)
		}
	}
}

func TestTheWrapperDeclaresWhatItsInnerLegDeclares(t *testing.T) {
	for _, want := range []leg.Abilities{{CloudSessions: true}, {OtherHosts: true, ReraisesCancelled: true}} {
		inner := newInner(sent)
		inner.fake.Declares = want
		h := newHarness(t, stateDir(t), inner, outbox.Options{}, outbox.Config{})
		wrapped, err := outbox.New(inner.fake, outbox.Config{Store: h.store})
		if err != nil {
			t.Fatal(err)
		}
		if got := leg.AbilitiesOf(wrapped); got != want {
			t.Errorf("the wrapper declares %+v, its inner leg %+v", got, want)
		}
	}
	h := newHarness(t, stateDir(t), newInner(sent), outbox.Options{}, outbox.Config{})
	if got := leg.AbilitiesOf(h.leg); got != (leg.Abilities{}) {
		t.Errorf("the wrapper of a leg that declares nothing declares %+v", got)
	}
}
