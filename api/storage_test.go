package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/leg/outbox"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// cloudStub is a remote leg listing one session, named cloud.
func cloudStub() *legtest.Fake {
	return legtest.New(message.ProtocolRemote,
		message.Session{Address: "bridge:session_01", Protocol: message.ProtocolRemote, Name: "cloud", SessionID: "session_01", Reachable: true})
}

// newStoreServer serves a router whose remote leg sends through an outbox
// in a fresh state directory, and returns the handler and the store.
func newStoreServer(t *testing.T, o outbox.Options) (http.Handler, *outbox.Store) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := outbox.Open(filepath.Join(dir, outbox.FileName), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	leg, err := outbox.New(cloudStub(), outbox.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return NewServer(Config{Router: router.New(router.Config{}, claudeStub(), leg)}).Handler(), st
}

func postMessage(h http.Handler, body string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestAStoreThatTakesNothingIsA5xx(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(t *testing.T, st *outbox.Store)
		opts   outbox.Options
		status int
		code   string
	}{
		{"the outbox at its cap is 507", func(t *testing.T, st *outbox.Store) {
			if _, err := st.Add(outbox.Entry{Message: message.Message{ID: "m0", To: "bridge:session_01", Body: "first"}, Leg: message.ProtocolRemote}); err != nil {
				t.Fatal(err)
			}
		}, outbox.Options{MaxPending: 1}, http.StatusInsufficientStorage, CodeStorageFull},
		{"a store that cannot write is 503", func(t *testing.T, st *outbox.Store) { st.Close() },
			outbox.Options{}, http.StatusServiceUnavailable, CodeNotStored},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, st := newStoreServer(t, tt.opts)
			tt.setup(t, st)
			rec := postMessage(h, `{"to":"cloud","text":"hello"}`)
			var e Error
			if rec.Code != tt.status || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code != tt.code || !strings.Contains(e.Error, "not accepted") {
				t.Fatalf("%d %s, want %d with code %s", rec.Code, rec.Body.String(), tt.status, tt.code)
			}
		})
	}
}

func TestAFullDiskIs507(t *testing.T) {
	e := errorOf(fmt.Errorf("remote: %w", fmt.Errorf("%w: write outbox.db: %w", message.ErrNotAccepted, syscall.ENOSPC)))
	if e.Code != CodeStorageFull || codeStatus[e.Code] != http.StatusInsufficientStorage {
		t.Fatalf("ENOSPC maps to %+v, want %s (507)", e, CodeStorageFull)
	}
}
