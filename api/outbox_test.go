package api

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/leg/outbox"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// newOutboxServer serves a router whose remote leg has an outbox holding
// three messages: m1 acked, m2 and m3 pending.
func newOutboxServer(t *testing.T) *Client {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := outbox.Open(filepath.Join(dir, outbox.FileName), outbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	leg, err := outbox.New(legtest.New(message.ProtocolRemote), outbox.Config{Store: st, EventUUID: func(id string) string { return "ev-" + id }})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, body := range []string{"first", "second\nline", "third"} {
		id := "m" + string(rune('1'+i))
		if _, err := st.Add(outbox.Entry{Message: message.Message{ID: id, To: "bridge:s1", Body: body}, Leg: message.ProtocolRemote, AcceptedAt: at.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Update("m2", func(e *outbox.Entry) { e.Attempts, e.LastError = 2, "HTTP 503" }); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update("m1", func(e *outbox.Entry) { e.State, e.Attempts, e.FinishedAt = message.OutboxAcked, 1, at }); err != nil {
		t.Fatal(err)
	}
	srv := NewServer(Config{Router: router.New(router.Config{}, legtest.New(message.ProtocolClaude), leg)})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return NewTCPClient(hs.URL, "")
}

func TestOutboxListsWhatWaitsForTheServer(t *testing.T) {
	c := newOutboxServer(t)
	ctx := context.Background()
	summary := func(items []message.OutboxItem) string {
		var s []string
		for _, it := range items {
			s = append(s, it.ID+":"+it.State.String()+":"+it.EventUUID+":"+it.Preview)
		}
		return strings.Join(s, " ")
	}
	tests := []struct {
		name string
		all  bool
		want string
	}{
		{"pending messages are listed oldest first with their event uuid", false, "m2:pending:ev-m2:second line m3:pending:ev-m3:third"},
		{"all adds the acknowledged ones", true, "m1:acked:ev-m1:first m2:pending:ev-m2:second line m3:pending:ev-m3:third"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, err := c.Outbox(ctx, tt.all)
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(items); got != tt.want {
				t.Fatalf("listed %s, want %s", got, tt.want)
			}
		})
	}
	t.Run("a retried message shows its attempts and last error", func(t *testing.T) {
		items, _ := c.Outbox(ctx, false)
		if items[0].Attempts != 2 || items[0].LastError != "HTTP 503" || items[0].To != "bridge:s1" || items[0].Leg != message.ProtocolRemote {
			t.Fatalf("listed %+v", items[0])
		}
	})
}

func TestOutboxWithoutOneAndWithBadInput(t *testing.T) {
	tests := []struct {
		name   string
		path   string
		status int
		body   string
	}{
		{"with no outbox the list is empty", "/v1/outbox", 200, "[]"},
		{"a bad all is 400", "/v1/outbox?all=maybe", 400, CodeBadRequest},
	}
	h := newTestServer().Handler()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", tt.path, nil))
			if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.body) {
				t.Fatalf("%d %s, want %d with %s", rec.Code, rec.Body.String(), tt.status, tt.body)
			}
		})
	}
}
