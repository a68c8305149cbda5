package message

import "testing"

func TestTheReceiptStateMachine(t *testing.T) {
	tests := []struct {
		name  string
		steps []Status
		want  Status
		moved int
	}{
		{"a clean send is sent then delivered", []Status{StatusSent, StatusDelivered}, StatusDelivered, 2},
		{"a held message is released", []Status{StatusSent, StatusHeld, StatusDelivered}, StatusDelivered, 3},
		{"a held message is denied", []Status{StatusSent, StatusHeld, StatusDenied}, StatusDenied, 3},
		{"a held message expires", []Status{StatusSent, StatusHeld, StatusExpired}, StatusExpired, 3},
		{"a repeated held is ignored", []Status{StatusSent, StatusHeld, StatusHeld}, StatusHeld, 2},
		{"a delivered message is not held or denied later", []Status{StatusSent, StatusDelivered, StatusHeld, StatusDenied}, StatusDelivered, 2},
		{"a delivered message can still expire unread", []Status{StatusSent, StatusDelivered, StatusExpired}, StatusExpired, 3},
		{"a dropped message stays dropped", []Status{StatusSent, StatusDropped, StatusDelivered}, StatusDropped, 2},
		{"a failed write is final", []Status{StatusFailed, StatusSent}, StatusFailed, 1},
		{"denied cannot come before held from queued", []Status{StatusDenied}, StatusQueued, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker()
			moved := 0
			for _, s := range tt.steps {
				if tr.Apply(Receipt{Status: s}) {
					moved++
				}
			}
			if tr.Status != tt.want || moved != tt.moved || len(tr.Receipts) != tt.moved {
				t.Fatalf("status %v after %d moves (%d kept), want %v after %d", tr.Status, moved, len(tr.Receipts), tt.want, tt.moved)
			}
		})
	}
}

func TestStatusAndModeWireSpellings(t *testing.T) {
	for s := StatusQueued; s <= StatusFailed; s++ {
		got, err := ParseStatus(s.String())
		if err != nil || got != s {
			t.Errorf("status %v does not round-trip: %v %v", s, got, err)
		}
	}
	if _, err := ParseStatus("bogus"); err == nil {
		t.Error("a bogus status parsed")
	}
	for _, m := range []Mode{ModeUnknown, ModeBypass, ModePrompting} {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("mode %v does not round-trip", m)
		}
	}
	if _, err := ParseMode("yolo"); err == nil {
		t.Error("mode yolo parsed")
	}
	finals := map[Status]bool{StatusDelivered: true, StatusDenied: true, StatusExpired: true, StatusRefused: true,
		StatusDropped: true, StatusMisaddressed: true, StatusFailed: true}
	for s := StatusQueued; s <= StatusFailed; s++ {
		if s.Final() != finals[s] {
			t.Errorf("%v.Final() = %v", s, s.Final())
		}
	}
}
