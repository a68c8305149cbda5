package claude

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/uds"
)

func TestASessionIsListedWithItsStartTime(t *testing.T) {
	tests := []struct {
		name      string
		startedAt int64 // the record's, Unix ms; 0 leaves it out
		want      func(pid int) time.Time
	}{
		{"the record's start time when it gives one", 1795980851827, func(int) time.Time { return time.UnixMilli(1795980851827).UTC() }},
		{"its process's start time when the record gives none", 0, func(pid int) time.Time {
			st, err := uds.StartTime(pid)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, env := registered(t)
			sock := filepath.Join(testutil.ShortTempDir(t), "a.sock")
			pid, start := listenerProcess(t, sock, false)
			fields := map[string]any{"procStart": start, "pidDomain": p.pidDomain, "messagingSocketPath": sock, "sessionId": "s-started"}
			if tt.startedAt != 0 {
				fields["startedAt"] = tt.startedAt
			}
			writeEntry(t, env.sessionsDir(), pid, fields)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ss, err := p.Sessions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range ss {
				if s.PID != pid {
					continue
				}
				if want := tt.want(pid); !s.StartedAt.Equal(want) {
					t.Errorf("started_at %v, want %v", s.StartedAt, want)
				}
				return
			}
			t.Fatalf("the session is not listed: %v", ss)
		})
	}
}
