package sessionsapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/leg/remote/sessionsapi"
)

const userEvent = `{"type":"user","message":{"role":"user","content":"retry me"}}`

func TestRetries(t *testing.T) {
	ctx := context.Background()
	type call func(e env, id string) error
	get := func(e env, id string) error { _, err := e.c.GetSession(ctx, id); return err }
	create := func(e env, id string) error {
		_, err := e.c.CreateSession(ctx, sessionsapi.CreateSessionRequest{Title: "created"})
		return err
	}
	post := func(e env, id string) error {
		_, err := e.c.PostEvents(ctx, id, json.RawMessage(userEvent))
		return err
	}
	postCode := func(e env, id string) error {
		_, err := e.c.PostCodeEvents(ctx, id, json.RawMessage(userEvent))
		return err
	}
	patch := func(e env, id string) error {
		title := "t"
		_, err := e.c.PatchSession(ctx, id, sessionsapi.SessionPatch{Title: &title})
		return err
	}
	ping := func(e env, id string) error { return e.c.PingCodeSession(ctx, id) }

	tests := []struct {
		name     string
		fail     fakecloud.FailSpec // Path "" is filled with the call's path
		method   string
		path     string // under /v1, with {id}
		call     call
		want     error // nil: the call succeeds in the end
		requests int   // how many reached the server
		waits    []time.Duration
	}{
		{"a GET is retried through two 500s", fakecloud.FailSpec{Status: 500, Times: 2},
			"GET", "/v1/sessions/{id}", get, nil, 3, nil},
		{"a GET waits what a 503's Retry-After says", fakecloud.FailSpec{Status: 503, RetryAfter: 2 * time.Second},
			"GET", "/v1/sessions/{id}", get, nil, 2, []time.Duration{2 * time.Second}},
		{"a 429 is retried after its Retry-After", fakecloud.FailSpec{Status: 429, RetryAfter: 3 * time.Second},
			"GET", "/v1/sessions/{id}", get, nil, 2, []time.Duration{3 * time.Second}},
		{"a GET gives up after MaxAttempts 500s", fakecloud.FailSpec{Status: 500, Times: 10},
			"GET", "/v1/sessions/{id}", get, sessionsapi.ErrServer, 5, nil},
		{"a 403 is not retried", fakecloud.FailSpec{Status: 403},
			"GET", "/v1/sessions/{id}", get, sessionsapi.ErrForbidden, 1, nil},
		{"a 404 is not retried", fakecloud.FailSpec{Status: 404},
			"GET", "/v1/sessions/{id}", get, sessionsapi.ErrNotFound, 1, nil},
		{"a 401 with a static token is not retried", fakecloud.FailSpec{Status: 401},
			"GET", "/v1/sessions/{id}", get, sessionsapi.ErrUnauthorized, 1, nil},
		{"a Retry-After beyond MaxElapsed is given up on at once", fakecloud.FailSpec{Status: 429, RetryAfter: time.Hour},
			"GET", "/v1/sessions/{id}", get, sessionsapi.ErrRateLimited, 1, []time.Duration{}},
		{"a PATCH is retried through a 502", fakecloud.FailSpec{Status: 502},
			"PATCH", "/v1/sessions/{id}", patch, nil, 2, nil},
		{"an event post is retried through a 503", fakecloud.FailSpec{Status: 503},
			"POST", "/v1/sessions/{id}/events", post, nil, 2, nil},
		{"a code event post is retried through a 500", fakecloud.FailSpec{Status: 500},
			"POST", "/v1/code/sessions/{id}/events", postCode, nil, 2, nil},
		{"a ping is retried through a 500", fakecloud.FailSpec{Status: 500},
			"POST", "/v1/code/sessions/{id}/ping", ping, nil, 2, nil},
		{"a create is retried after a 429", fakecloud.FailSpec{Status: 429, RetryAfter: time.Second},
			"POST", "/v1/sessions", create, nil, 2, []time.Duration{time.Second}},
		{"a create is not retried after a 500: it may have been made", fakecloud.FailSpec{Status: 500},
			"POST", "/v1/sessions", create, sessionsapi.ErrServer, 1, []time.Duration{}},
		{"a create is not retried after a 503 either", fakecloud.FailSpec{Status: 503},
			"POST", "/v1/sessions", create, sessionsapi.ErrServer, 1, []time.Duration{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t, fakecloud.Options{}, sessionsapi.Options{})
			id := e.srv.CreateSession("retries")
			path := strings.ReplaceAll(tt.path, "{id}", id)
			f := tt.fail
			f.Method, f.Path = tt.method, path
			e.srv.Fail(f)
			err := tt.call(e, id)
			if tt.want == nil && err != nil {
				t.Fatalf("got %v, want success", err)
			}
			if tt.want != nil {
				wantErr(t, err, tt.want)
			}
			n := 0
			for _, r := range e.srv.Requests() {
				if r.Method == tt.method && r.Path == path {
					n++
				}
			}
			if n != tt.requests {
				t.Fatalf("%d requests reached the server, want %d", n, tt.requests)
			}
			waits := e.clock.waits()
			if tt.waits != nil && !equalDurations(waits, tt.waits) {
				t.Fatalf("waited %v, want %v", waits, tt.waits)
			}
			if len(waits) != tt.requests-1 && (tt.want == nil || tt.requests > 1) {
				t.Fatalf("waited %d times for %d requests", len(waits), tt.requests)
			}
			var api *sessionsapi.APIError
			if tt.want != nil && errors.As(err, &api) && api.Attempts != tt.requests {
				t.Fatalf("error says %d attempts, %d were made", api.Attempts, tt.requests)
			}
		})
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestBackoffGrowsWithJitter(t *testing.T) {
	e := setup(t, fakecloud.Options{}, sessionsapi.Options{MaxAttempts: 5})
	id := e.srv.CreateSession("backoff")
	e.srv.Fail(fakecloud.FailSpec{Method: "GET", Path: "/v1/sessions/" + id, Status: 500, Times: 4})
	if _, err := e.c.GetSession(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	waits := e.clock.waits()
	if len(waits) != 4 {
		t.Fatalf("waited %v", waits)
	}
	// 500 ms doubling, each within ±50 % jitter.
	base := 500 * time.Millisecond
	for i, w := range waits {
		lo, hi := base/2, base*3/2
		if w < lo || w > hi {
			t.Fatalf("wait %d is %v, want within [%v, %v]", i, w, lo, hi)
		}
		base *= 2
	}
}

func TestRetriedPostsDoNotDuplicate(t *testing.T) {
	ctx := context.Background()
	t.Run("a post whose answer was lost is sent again with the same uuids and stored once", func(t *testing.T) {
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{})
		id := e.srv.CreateSession("lost answer")
		e.trip.fail = func(n int, r *http.Request) (bool, bool) { return false, n == 1 }
		stored, err := e.c.PostEvents(ctx, id, json.RawMessage(userEvent), json.RawMessage(`{"type":"user","message":{"role":"user","content":"two"}}`))
		if err != nil {
			t.Fatal(err)
		}
		sent := e.trip.sent()
		if len(sent) != 2 || sent[0] != sent[1] {
			t.Fatalf("the retry sent other bytes:\n%s\n%s", sent[0], sent[len(sent)-1])
		}
		evs := sentEvents(t, sent[0])
		if field(t, evs[0], "uuid") == field(t, evs[1], "uuid") {
			t.Fatal("two events share a uuid")
		}
		if n := e.srv.Duplicates(id); n != 2 {
			t.Fatalf("the server turned away %d duplicates, want 2", n)
		}
		page, err := e.c.ListEvents(ctx, id, "", 0)
		if err != nil || len(page.Data) != 2 || len(stored) != 2 {
			t.Fatalf("%d events stored, %d returned, %v", len(page.Data), len(stored), err)
		}
	})
	t.Run("a code post whose answer was lost is stored once", func(t *testing.T) {
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{})
		id := e.srv.CreateSession("lost answer v2")
		e.trip.fail = func(n int, r *http.Request) (bool, bool) { return false, n == 1 }
		if _, err := e.c.PostCodeEvents(ctx, id, json.RawMessage(userEvent)); err != nil {
			t.Fatal(err)
		}
		if page, _ := e.c.ListCodeEvents(ctx, id, 0, 0); len(page.Data) != 1 || e.srv.Duplicates(id) != 1 {
			t.Fatalf("%d events stored, %d duplicates", len(page.Data), e.srv.Duplicates(id))
		}
	})
	t.Run("a create whose answer was lost is not sent again", func(t *testing.T) {
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{})
		e.trip.fail = func(n int, r *http.Request) (bool, bool) { return false, n == 1 }
		_, err := e.c.CreateSession(ctx, sessionsapi.CreateSessionRequest{Title: "once"})
		if err == nil {
			t.Fatal("a lost answer was reported as success")
		}
		if n := len(e.requests("/v1/sessions")); n != 1 {
			t.Fatalf("%d creates were sent", n)
		}
	})
	t.Run("a create whose connection was refused is sent again", func(t *testing.T) {
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{})
		e.trip.fail = func(n int, r *http.Request) (bool, bool) { return n == 1, false }
		s, err := e.c.CreateSession(ctx, sessionsapi.CreateSessionRequest{Title: "after a refused dial"})
		if err != nil || s.Title != "after a refused dial" {
			t.Fatalf("got %+v, %v", s, err)
		}
		if list, _ := e.c.ListSessions(ctx); len(list) != 1 {
			t.Fatalf("%d sessions", len(list))
		}
	})
	t.Run("a GET whose answer was lost is sent again", func(t *testing.T) {
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{})
		e.trip.fail = func(n int, r *http.Request) (bool, bool) { return false, n <= 2 }
		if _, err := e.c.ListSessions(ctx); err != nil {
			t.Fatal(err)
		}
		if n := len(e.requests("/v1/sessions")); n != 3 {
			t.Fatalf("%d requests", n)
		}
	})
	t.Run("transport failures that never end are reported with the attempts", func(t *testing.T) {
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{MaxAttempts: 3})
		e.trip.fail = func(n int, r *http.Request) (bool, bool) { return true, false }
		_, err := e.c.ListSessions(ctx)
		if err == nil || !strings.Contains(err.Error(), "after 3 attempts") || !strings.Contains(err.Error(), "ListSessions") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestCancellation(t *testing.T) {
	t.Run("a caller that gives up while the client waits stops it at once", func(t *testing.T) {
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{})
		id := e.srv.CreateSession("cancel")
		e.srv.Fail(fakecloud.FailSpec{Method: "GET", Path: "/v1/sessions/" + id, Status: 500, Times: 10})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		e.clock.onSleep = cancel
		_, err := e.c.GetSession(ctx, id)
		wantErr(t, err, context.Canceled)
		if n := len(e.requests("/v1/sessions/" + id)); n != 1 {
			t.Fatalf("%d requests after the caller gave up", n)
		}
	})
	t.Run("a cancelled context sends nothing", func(t *testing.T) {
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := e.c.ListSessions(ctx)
		wantErr(t, err, context.Canceled)
		if len(e.srv.Requests()) != 0 {
			t.Fatal("a request was sent")
		}
	})
}
