package sessionsapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/leg/remote/sessionsapi"
)

// A redirect is an error, never followed: Go would resend a POST as a
// bodiless GET, and a 2xx from wherever it lands would read as accepted.
// It would also carry the credentials to another port of the same host.
func TestRedirectsAreRefusedNotFollowed(t *testing.T) {
	title := "t"
	calls := []struct {
		name string
		call func(context.Context, *sessionsapi.Client) error
	}{
		{"PostEvents", func(ctx context.Context, c *sessionsapi.Client) error {
			_, err := c.PostEvents(ctx, "s1", json.RawMessage(`{"type":"user","message":{"role":"user","content":"hi"}}`))
			return err
		}},
		{"CreateSession", func(ctx context.Context, c *sessionsapi.Client) error {
			_, err := c.CreateSession(ctx, sessionsapi.CreateSessionRequest{Title: "t", EnvironmentID: "env-1"})
			return err
		}},
		{"PatchSession", func(ctx context.Context, c *sessionsapi.Client) error {
			_, err := c.PatchSession(ctx, "s1", sessionsapi.SessionPatch{Title: &title})
			return err
		}},
		{"GetSession", func(ctx context.Context, c *sessionsapi.Client) error {
			_, err := c.GetSession(ctx, "s1")
			return err
		}},
	}
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		for _, tt := range calls {
			t.Run(tt.name+" "+http.StatusText(status), func(t *testing.T) {
				var elsewhere, sends atomic.Int32
				other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					elsewhere.Add(1)
					w.Write([]byte(`{"id":"s1","data":[],"has_more":false}`))
				}))
				defer other.Close()
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/moved" {
						w.Write([]byte(`{"id":"s1","data":[],"has_more":false}`))
						return
					}
					if sends.Add(1)%2 == 0 {
						http.Redirect(w, r, "/moved", status)
					} else {
						http.Redirect(w, r, other.URL+"/v1/sessions", status)
					}
				}))
				defer srv.Close()
				hc := &http.Client{}
				c, err := sessionsapi.New(sessionsapi.Options{BaseURL: srv.URL, Token: auth.StaticToken(testToken), HTTPClient: hc})
				if err != nil {
					t.Fatal(err)
				}
				for range 2 { // once to another server, once to the same one
					err = tt.call(context.Background(), c)
					var api *sessionsapi.APIError
					if !errors.As(err, &api) || api.Status != status {
						t.Fatalf("err = %v, want an APIError with HTTP %d", err, status)
					}
					if api.Attempts != 1 {
						t.Fatalf("a redirect was sent %d times, want once: it is not transient", api.Attempts)
					}
				}
				if n := elsewhere.Load(); n != 0 {
					t.Fatalf("the redirect's target got %d requests (with the credentials)", n)
				}
				if hc.CheckRedirect != nil {
					t.Fatal("the caller's http.Client was changed")
				}
			})
		}
	}
}
