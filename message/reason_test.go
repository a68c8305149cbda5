package message

import "testing"

func TestDropReasonWire(t *testing.T) {
	tests := []struct {
		r    DropReason
		wire string
	}{
		{DropDuplicate, "duplicate"}, {DropRateLimited, "rate-limited"}, {DropHopLoop, "hop-loop"},
		{DropHopRunaway, "hop-runaway"}, {DropQueueFull, "queue-full"},
	}
	for _, tt := range tests {
		t.Run(tt.wire+" round-trips through its wire spelling", func(t *testing.T) {
			if tt.r.String() != tt.wire {
				t.Fatalf("String() = %q", tt.r.String())
			}
			got, err := ParseDropReason(tt.wire)
			if err != nil || got != tt.r {
				t.Fatalf("ParseDropReason(%q) = %v, %v", tt.wire, got, err)
			}
			var u DropReason
			if err := u.UnmarshalText([]byte(tt.wire)); err != nil || u != tt.r {
				t.Fatalf("UnmarshalText = %v, %v", u, err)
			}
		})
	}
	t.Run("an unknown spelling is refused", func(t *testing.T) {
		if _, err := ParseDropReason("message_too_large"); err == nil {
			t.Fatal("accepted message_too_large")
		}
	})
	t.Run("the zero reason has no wire spelling", func(t *testing.T) {
		if _, err := DropReason(0).MarshalText(); err == nil {
			t.Fatal("marshalled the zero reason")
		}
	})
}

func TestDropReasonsHaveOneWireSpelling(t *testing.T) {
	tests := []struct {
		r     DropReason
		wire  string
		guard bool
	}{
		{DropDuplicate, "duplicate", true}, {DropRateLimited, "rate-limited", true},
		{DropHopLoop, "hop-loop", true}, {DropHopRunaway, "hop-runaway", true},
		{DropQueueFull, "queue-full", true}, {DropDenied, "denied", false},
		{DropExpired, "expired", false}, {DropRefused, "refused", false},
		{DropUnauthenticated, "unauthenticated", false}, {DropAliasLimit, "alias-limit", false},
		{DropUnserved, "unserved", false},
		{DropDisconnected, "disconnected", false},
	}
	for _, tt := range tests {
		t.Run(tt.wire+" reads back as itself", func(t *testing.T) {
			if tt.r.String() != tt.wire || tt.r.Admission() != tt.guard {
				t.Fatalf("%d: %q guard %v", tt.r, tt.r.String(), tt.r.Admission())
			}
			if got, err := ParseDropReason(tt.wire); err != nil || got != tt.r {
				t.Fatalf("ParseDropReason(%q) = %v, %v", tt.wire, got, err)
			}
		})
	}
}

func TestLinkStatesHaveOneWireSpelling(t *testing.T) {
	for s, wire := range map[LinkState]string{
		LinkConnected: "connected", LinkReconnecting: "reconnecting", LinkDormant: "dormant", LinkGaveUp: "gave_up",
	} {
		t.Run(wire+" reads back as itself", func(t *testing.T) {
			b, err := s.MarshalText()
			if err != nil || string(b) != wire || s.String() != wire {
				t.Fatalf("%d marshals to %q, %v", s, b, err)
			}
			var got LinkState
			if err := got.UnmarshalText(b); err != nil || got != s {
				t.Fatalf("UnmarshalText(%q) = %v, %v", b, got, err)
			}
		})
	}
	if _, err := ParseLinkState("connecting"); err == nil {
		t.Fatal("accepted an unknown state")
	}
}
