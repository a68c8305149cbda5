package api

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// openEvents opens the event stream and returns a func that reads the next
// frame's id ("gap" for a gap notice).
func openEvents(t *testing.T, srv *httptest.Server, header, query string) func() string {
	t.Helper()
	req, err := http.NewRequest("GET", srv.URL+"/v1/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if header != "" {
		req.Header.Set("Last-Event-ID", header)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	return func() string {
		t.Helper()
		for sc.Scan() {
			switch line := sc.Text(); {
			case strings.HasPrefix(line, "id: "):
				return strings.TrimPrefix(line, "id: ")
			case line == "event: gap":
				return "gap"
			}
		}
		t.Fatalf("the stream ended: %v", sc.Err())
		return ""
	}
}

func idle() message.Event {
	return message.Event{Type: message.EventIdle, Idle: &message.IdleNotice{Peer: "uds:/tmp/p.sock", State: "idle"}}
}

func TestTheEventStreamReplaysAfterTheLastEventIDThenGoesLive(t *testing.T) {
	tests := []struct {
		name   string
		header string
		query  string
		want   []string
	}{
		{"Last-Event-ID 3 replays 4 and 5", "3", "", []string{"4", "5"}},
		{"last_event_id=0 replays everything kept", "", "?last_event_id=0", []string{"1", "2", "3", "4", "5"}},
		{"the header wins over the query", "4", "?last_event_id=0", []string{"5"}},
		{"no id replays nothing", "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer()
			srv := httptest.NewServer(s.Handler())
			t.Cleanup(srv.Close) // after the stream's body is closed (cleanups run last first)
			for range 5 {
				s.cfg.Router.Hub().Publish(idle())
			}
			next := openEvents(t, srv, tt.header, tt.query)
			var got []string
			for range tt.want {
				got = append(got, next())
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("replayed ids = %v, want %v", got, tt.want)
			}
			// The replay was read, so the subscription exists: what is
			// published now arrives live.
			live := s.cfg.Router.Hub().Publish(idle())
			if id := next(); id != strconv.FormatUint(live.ID, 10) {
				t.Fatalf("live id = %s, want %d", id, live.ID)
			}
		})
	}
}

func TestWatchHandsOnTheGapNoticeBeforeTheKeptEvents(t *testing.T) {
	rt := router.New(router.Config{KeepEvents: 2}, claudeStub())
	for range 5 {
		rt.Hub().Publish(idle())
	}
	hs := httptest.NewServer(NewServer(Config{Router: rt}).Handler())
	defer hs.Close()
	var got []string
	enough := errors.New("enough")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a bound on a hang
	defer cancel()
	err := NewTCPClient(hs.URL, "").Watch(ctx, 1, func(ev message.Event) error {
		got = append(got, fmt.Sprintf("%s %d", ev.Type, ev.ID))
		if len(got) == 3 {
			return enough
		}
		return nil
	})
	if !errors.Is(err, enough) || strings.Join(got, ",") != "gap 1,idle 4,idle 5" {
		t.Fatalf("got %v (%v), want the gap after 1, then events 4 and 5", got, err)
	}
}
