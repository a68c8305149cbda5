package message

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestASessionAlwaysCarriesTheContractKeys(t *testing.T) {
	tests := []struct {
		name string
		s    Session
	}{
		{"a local session", Session{Address: "uds:/run/1.sock", Protocol: ProtocolClaude, Name: "work", Ref: "abc123", SessionID: "s", PID: 1, Kind: "interactive", Reachable: true}},
		{"a remote session with no pid", Session{Address: "bridge:session_1", Protocol: ProtocolRemote, Kind: "remote"}},
		{"a zero session", Session{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.s)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			// sessions --json has at least these keys in every entry: scripts rely on them.
			for _, k := range []string{"address", "protocol", "name", "ref", "session_id", "pid", "kind", "reachable"} {
				if _, ok := m[k]; !ok {
					t.Errorf("%s lacks %q", b, k)
				}
			}
		})
	}
}

func TestASessionWithNoStartTimeLeavesStartedAtOut(t *testing.T) {
	b, _ := json.Marshal(Session{Address: "uds:/run/1.sock"})
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	if v, ok := m["started_at"]; ok {
		t.Errorf("started_at = %s for an unknown start time, want it left out", v)
	}
	for key, v := range map[string]any{`"expires"`: Held{}, `"finished_at"`: IdleNotice{}} {
		if b, _ := json.Marshal(v); strings.Contains(string(b), key) {
			t.Errorf("%s carries %s with no time to give", b, key)
		}
	}
}
