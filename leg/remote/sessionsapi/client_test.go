package sessionsapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/leg/remote/sessionsapi"
)

func TestSessions(t *testing.T) {
	ctx := context.Background()
	e := setup(t, fakecloud.Options{}, sessionsapi.Options{})
	first := e.srv.CreateSession("first")

	t.Run("a created session can be fetched, listed and patched", func(t *testing.T) {
		s, err := e.c.CreateSession(ctx, sessionsapi.CreateSessionRequest{
			Title: "made by the client", EnvironmentID: "env_fake_bridge",
			Events:         []json.RawMessage{json.RawMessage(`{"type":"user","message":{"role":"user","content":"hello"}}`)},
			SessionContext: json.RawMessage(`{"model":"claude-sonnet-4-6"}`),
		})
		if err != nil {
			t.Fatal(err)
		}
		if s.ID == "" || s.Title != "made by the client" || s.Status != sessionsapi.StatusActive || s.EnvironmentID != "env_fake_bridge" || s.CreatedAt.IsZero() {
			t.Fatalf("created %+v", s)
		}
		if string(s.SessionContext) != `{"model":"claude-sonnet-4-6"}` || len(s.Raw) == 0 {
			t.Fatalf("session context %s, raw %s", s.SessionContext, s.Raw)
		}
		got, err := e.c.GetSession(ctx, s.ID)
		if err != nil || got.ID != s.ID || got.Title != s.Title {
			t.Fatalf("GetSession = %+v, %v", got, err)
		}
		list, err := e.c.ListSessions(ctx)
		if err != nil || len(list) != 2 || list[0].ID != first || list[1].ID != s.ID {
			t.Fatalf("ListSessions = %+v, %v", list, err)
		}
		title, status := "renamed", sessionsapi.StatusArchived
		p, err := e.c.PatchSession(ctx, s.ID, sessionsapi.SessionPatch{Title: &title, Status: &status})
		if err != nil || p.Title != title || p.Status != status {
			t.Fatalf("PatchSession = %+v, %v", p, err)
		}
		only := "only the title"
		p, err = e.c.PatchSession(ctx, s.ID, sessionsapi.SessionPatch{Title: &only})
		if err != nil || p.Title != only || p.Status != status {
			t.Fatalf("a patch of the title alone = %+v, %v", p, err)
		}
		page, err := e.c.ListEvents(ctx, s.ID, "", 0)
		if err != nil || len(page.Data) != 1 || field(t, page.Data[0], "type") != "user" || field(t, page.Data[0], "uuid") == "" {
			t.Fatalf("the initial event: %+v, %v", page, err)
		}
	})
	t.Run("a bad status is the server's 400", func(t *testing.T) {
		bad := "paused"
		_, err := e.c.PatchSession(ctx, first, sessionsapi.SessionPatch{Status: &bad})
		wantErr(t, err, sessionsapi.ErrBadRequest)
	})
	t.Run("an unknown session is ErrNotFound with the server's words", func(t *testing.T) {
		_, err := e.c.GetSession(ctx, "session_nope")
		wantErr(t, err, sessionsapi.ErrNotFound)
		var api *sessionsapi.APIError
		if !errors.As(err, &api) || api.Status != 404 || api.Type != "not_found_error" || api.Op != "GetSession" || api.Message != "session not found" {
			t.Fatalf("got %#v", err)
		}
	})
	t.Run("a session's share status is returned as sent", func(t *testing.T) {
		raw, err := e.c.ShareStatus(ctx, first)
		if err != nil || string(raw) != `{"shared":false}` {
			t.Fatalf("ShareStatus = %s, %v", raw, err)
		}
	})
	t.Run("an empty id is refused before anything is sent", func(t *testing.T) {
		before := len(e.srv.Requests())
		for _, err := range []error{
			func() error { _, err := e.c.GetSession(ctx, ""); return err }(),
			func() error { _, err := e.c.PostEvents(ctx, "", json.RawMessage(`{}`)); return err }(),
			func() error { _, err := e.c.ListCodeEvents(ctx, "", 0, 0); return err }(),
			e.c.PingCodeSession(ctx, ""),
		} {
			wantErr(t, err, sessionsapi.ErrNoID)
		}
		if after := len(e.srv.Requests()); after != before {
			t.Fatalf("%d requests were sent", after-before)
		}
	})
	t.Run("an id with a slash stays one path segment", func(t *testing.T) {
		_, err := e.c.GetSession(ctx, "a/b")
		var api *sessionsapi.APIError
		// The session handler's own 404, not the router's: {id} matched "a/b".
		if !errors.As(err, &api) || api.Type != "not_found_error" || api.Message != "session not found" {
			t.Fatalf("got %v", err)
		}
	})
}

func TestEvents(t *testing.T) {
	ctx := context.Background()
	e := setup(t, fakecloud.Options{}, sessionsapi.Options{})
	id := e.srv.CreateSession("events")
	var posted []json.RawMessage
	for i := range 5 {
		posted = append(posted, json.RawMessage(fmt.Sprintf(`{"type":"user","message":{"role":"user","content":"m%d"}}`, i)))
	}
	stored, err := e.c.PostEvents(ctx, id, posted...)
	if err != nil || len(stored) != 5 {
		t.Fatalf("PostEvents = %d events, %v", len(stored), err)
	}
	var uuids []string
	for _, s := range stored {
		uuids = append(uuids, field(t, s, "uuid"))
	}

	t.Run("posted events come back with the uuids the client gave them", func(t *testing.T) {
		sent := sentEvents(t, e.trip.sent()[len(e.trip.sent())-1])
		for i, s := range sent {
			if u := field(t, s, "uuid"); u == "" || u != uuids[i] {
				t.Fatalf("event %d sent with uuid %q, stored with %q", i, u, uuids[i])
			}
		}
	})
	t.Run("a page of events follows after_id and limit", func(t *testing.T) {
		var got []string
		after := ""
		for {
			p, err := e.c.ListEvents(ctx, id, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Data) > 2 {
				t.Fatalf("a page of %d events with limit 2", len(p.Data))
			}
			for _, d := range p.Data {
				got = append(got, field(t, d, "uuid"))
			}
			if p.LastID != got[len(got)-1] || p.FirstID != got[len(got)-len(p.Data)] {
				t.Fatalf("first/last id %q/%q do not match the page", p.FirstID, p.LastID)
			}
			if !p.HasMore {
				break
			}
			after = p.LastID
		}
		if strings.Join(got, ",") != strings.Join(uuids, ",") {
			t.Fatalf("paged %v, want %v", got, uuids)
		}
	})
	t.Run("EventsAfter is one page after an id", func(t *testing.T) {
		evs, more, err := e.c.EventsAfter(ctx, id, uuids[2])
		if err != nil || more || len(evs) != 2 || field(t, evs[0], "uuid") != uuids[3] {
			t.Fatalf("EventsAfter = %d events, more %v, %v", len(evs), more, err)
		}
	})
	t.Run("an event that already has a uuid keeps it", func(t *testing.T) {
		got, err := e.c.PostEvents(ctx, id, json.RawMessage(`{"type":"user","uuid":"my-own-uuid","message":{"role":"user","content":"x"}}`))
		if err != nil || field(t, got[0], "uuid") != "my-own-uuid" {
			t.Fatalf("got %s, %v", got, err)
		}
	})
	t.Run("a post with no events is refused before sending", func(t *testing.T) {
		_, err := e.c.PostEvents(ctx, id)
		wantErr(t, err, sessionsapi.ErrInvalidEvent)
	})
}

func TestCodeSessions(t *testing.T) {
	ctx := context.Background()
	e := setup(t, fakecloud.Options{}, sessionsapi.Options{})
	id := e.srv.CreateSession("code")

	t.Run("code sessions are listed and fetched", func(t *testing.T) {
		list, err := e.c.ListCodeSessions(ctx)
		if err != nil || len(list) != 1 || list[0].ID != id {
			t.Fatalf("ListCodeSessions = %+v, %v", list, err)
		}
		s, err := e.c.GetCodeSession(ctx, id)
		if err != nil || s.Title != "code" {
			t.Fatalf("GetCodeSession = %+v, %v", s, err)
		}
	})
	t.Run("posted code events come back as v2 envelopes after a sequence number", func(t *testing.T) {
		var evs []json.RawMessage
		for i := range 3 {
			evs = append(evs, json.RawMessage(fmt.Sprintf(`{"type":"user","message":{"role":"user","content":"c%d"}}`, i)))
		}
		stored, err := e.c.PostCodeEvents(ctx, id, evs...)
		if err != nil || len(stored) != 3 {
			t.Fatalf("PostCodeEvents = %d, %v", len(stored), err)
		}
		p, err := e.c.ListCodeEvents(ctx, id, 1, 0)
		if err != nil || len(p.Data) != 2 || p.HasMore {
			t.Fatalf("ListCodeEvents = %+v, %v", p, err)
		}
		var env struct {
			EventID     string          `json:"event_id"`
			SequenceNum uint64          `json:"sequence_num"`
			Payload     json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(p.Data[0], &env); err != nil || env.SequenceNum != 2 || env.EventID != field(t, stored[1], "uuid") {
			t.Fatalf("first envelope %s", p.Data[0])
		}
		if q := e.requests("/v1/code/sessions/" + id + "/events"); q[len(q)-1].RawQuery != "from_sequence_num=1" {
			t.Fatalf("query %q", q[len(q)-1].RawQuery)
		}
		more, hasMore, err := e.c.CodeEventsAfter(ctx, id, 3)
		if err != nil || len(more) != 0 || hasMore {
			t.Fatalf("CodeEventsAfter the end = %d, %v, %v", len(more), hasMore, err)
		}
		page, err := e.c.ListCodeEvents(ctx, id, 0, 1)
		if err != nil || len(page.Data) != 1 || !page.HasMore {
			t.Fatalf("a limited page = %+v, %v", page, err)
		}
	})
	t.Run("a ping reaches the session", func(t *testing.T) {
		if err := e.c.PingCodeSession(ctx, id); err != nil {
			t.Fatal(err)
		}
		if n := e.srv.Pings(id); n != 1 {
			t.Fatalf("%d pings", n)
		}
		wantErr(t, e.c.PingCodeSession(ctx, "session_nope"), sessionsapi.ErrNotFound)
	})
}

func TestEnvironments(t *testing.T) {
	ctx := context.Background()
	e := setup(t, fakecloud.Options{}, sessionsapi.Options{})
	t.Run("environments are listed and fetched under the organisation", func(t *testing.T) {
		list, err := e.c.ListEnvironments(ctx)
		if err != nil || len(list) != 1 || list[0].EnvironmentID != "env_fake_bridge" || list[0].BridgeInfo == nil || !list[0].BridgeInfo.Online {
			t.Fatalf("ListEnvironments = %+v, %v", list, err)
		}
		env, err := e.c.GetEnvironment(ctx, "env_fake_bridge")
		if err != nil || env.Kind != "bridge" || env.CreatedAt.IsZero() {
			t.Fatalf("GetEnvironment = %+v, %v", env, err)
		}
		reqs := e.requests("/v1/environment_providers/private/organizations/" + testOrg + "/environments")
		if len(reqs) != 2 {
			t.Fatalf("%d requests under the org's path", len(reqs))
		}
		_, err = e.c.GetEnvironment(ctx, "env_nope")
		wantErr(t, err, sessionsapi.ErrNotFound)
	})
	t.Run("without an organisation the environment paths are refused", func(t *testing.T) {
		c, err := sessionsapi.New(sessionsapi.Options{BaseURL: e.srv.URL(), Token: auth.StaticToken(testToken)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ListEnvironments(ctx)
		wantErr(t, err, sessionsapi.ErrConfig)
	})
}

func TestHeadersAndCredentials(t *testing.T) {
	ctx := context.Background()
	const sessionKey = "sk-ant-sid01-cookie-value_0123"
	tests := []struct {
		name       string
		fo         fakecloud.Options
		o          sessionsapi.Options
		credHeader string
		credValue  string
	}{
		{"a bearer token is sent with every seed header", fakecloud.Options{Token: testToken},
			sessionsapi.Options{ClientPlatform: "gateway-test", Version: "1.2.3"}, "Authorization", "Bearer [redacted]"},
		{"a web session key is sent as the sessionKey cookie", fakecloud.Options{SessionKey: sessionKey},
			sessionsapi.Options{SessionKey: sessionKey, ClientPlatform: "gateway-test", Version: "1.2.3"}, "Cookie", "sessionKey=[redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t, tt.fo, tt.o)
			id := e.srv.CreateSession("h")
			if _, err := e.c.GetSession(ctx, id); err != nil {
				t.Fatal(err)
			}
			if _, err := e.c.PostEvents(ctx, id, json.RawMessage(`{"type":"user","message":{"role":"user","content":"x"}}`)); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				"anthropic-version": "2023-06-01", "anthropic-beta": "ccr-byoc-2025-07-29",
				"anthropic-client-feature": "ccr", "anthropic-client-platform": "gateway-test",
				"anthropic-client-version": "1.2.3", "x-organization-uuid": testOrg, tt.credHeader: tt.credValue,
			}
			reqs := e.requests("/v1/sessions/" + id)
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			for _, r := range reqs {
				for k, v := range want {
					if got := r.Header.Get(k); got != v {
						t.Fatalf("%s %s: %s = %q, want %q", r.Method, r.Path, k, got, v)
					}
				}
				ct := r.Header.Get("Content-Type")
				if (r.Method == http.MethodPost) != (ct == "application/json") {
					t.Fatalf("%s has content-type %q", r.Method, ct)
				}
			}
		})
	}
	t.Run("a wrong token is refused once and never quoted", func(t *testing.T) {
		e := setup(t, fakecloud.Options{Token: testToken}, sessionsapi.Options{Token: auth.StaticToken("sk-ant-wrong-token-value")})
		_, err := e.c.ListSessions(ctx)
		wantErr(t, err, sessionsapi.ErrUnauthorized)
		if strings.Contains(err.Error(), "sk-ant-wrong-token-value") || !strings.Contains(err.Error(), "log in again") {
			t.Fatalf("error %q", err)
		}
		if n := len(e.requests("/v1/sessions")); n != 1 {
			t.Fatalf("a static token was tried %d times", n)
		}
	})
	t.Run("a wrong session key is refused and never quoted", func(t *testing.T) {
		e := setup(t, fakecloud.Options{SessionKey: sessionKey}, sessionsapi.Options{SessionKey: "sk-ant-sid01-wrong"})
		_, err := e.c.ListSessions(ctx)
		wantErr(t, err, sessionsapi.ErrUnauthorized)
		if strings.Contains(err.Error(), "sk-ant-sid01-wrong") {
			t.Fatalf("error %q", err)
		}
	})
	t.Run("the stream headers carry credentials and open the v2 stream", func(t *testing.T) {
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{})
		id := e.srv.CreateSession("stream")
		h, err := e.c.StreamHeader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"Authorization", "anthropic-version", "anthropic-beta", "x-organization-uuid"} {
			if h.Get(k) == "" {
				t.Fatalf("stream header lacks %s: %v", k, h.Clone())
			}
		}
		if h.Get("Content-Type") != "" {
			t.Fatal("stream header has a content-type")
		}
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		req, _ := http.NewRequestWithContext(sctx, http.MethodGet, e.c.BaseURL()+"/v1/code/sessions/"+id+"/events/stream", nil)
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("stream answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	})
	t.Run("the accessors give back the configuration", func(t *testing.T) {
		c, err := sessionsapi.New(sessionsapi.Options{BaseURL: "https://api.example.invalid/", OrgUUID: testOrg, SessionKey: "k"})
		if err != nil || c.BaseURL() != "https://api.example.invalid" || c.OrgUUID() != testOrg {
			t.Fatalf("%v %q %q", err, c.BaseURL(), c.OrgUUID())
		}
	})
}

func TestNewRefuses(t *testing.T) {
	tok := auth.StaticToken(testToken)
	tests := []struct {
		name string
		o    sessionsapi.Options
	}{
		{"no base URL", sessionsapi.Options{Token: tok}},
		{"a base URL that is not http", sessionsapi.Options{BaseURL: "ftp://host", Token: tok}},
		{"a base URL with credentials", sessionsapi.Options{BaseURL: "https://u:p@host", Token: tok}},
		{"a base URL with a query", sessionsapi.Options{BaseURL: "https://host/?x=1", Token: tok}},
		{"no credentials", sessionsapi.Options{BaseURL: "https://host"}},
		{"both a token and a session key", sessionsapi.Options{BaseURL: "https://host", Token: tok, SessionKey: "sk-ant-sid01-both"}},
		{"a session key that would end the cookie", sessionsapi.Options{BaseURL: "https://host", SessionKey: "sk-ant-sid01; admin=1"}},
		{"a session key with a newline", sessionsapi.Options{BaseURL: "https://host", SessionKey: "sk-ant-sid01\r\nX: y"}},
		{"an organisation with a slash", sessionsapi.Options{BaseURL: "https://host", Token: tok, OrgUUID: "a/b"}},
		{"a version with a newline", sessionsapi.Options{BaseURL: "https://host", Token: tok, Version: "1\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			_, err := sessionsapi.New(tt.o)
			wantErr(t, err, sessionsapi.ErrConfig)
			if tt.o.SessionKey != "" && strings.Contains(err.Error(), tt.o.SessionKey) {
				t.Fatalf("error %q quotes the session key", err)
			}
		})
	}
	t.Run("options log without their session key", func(t *testing.T) {
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "opts", sessionsapi.Options{SessionKey: "sk-ant-sid01-secret"})
		if strings.Contains(buf.String(), "sk-ant-sid01-secret") {
			t.Fatalf("logged %s", buf.String())
		}
	})
}

func TestTokenSources(t *testing.T) {
	ctx := context.Background()
	t.Run("a refused token is refreshed once and the request retried", func(t *testing.T) {
		e := setup(t, fakecloud.Options{RefreshToken: "rt-0", ClientID: auth.ClaudeCodeClientID}, sessionsapi.Options{})
		// A stale Claude Code login: its first use refreshes it in memory.
		creds := filepath.Join(t.TempDir(), "credentials.json")
		login := fmt.Sprintf(`{"claudeAiOauth":{"accessToken":"at-stale","refreshToken":"rt-0","expiresAt":%d}}`, time.Now().Add(-time.Hour).UnixMilli())
		if err := os.WriteFile(creds, []byte(login), 0o600); err != nil {
			t.Fatal(err)
		}
		src, err := auth.ClaudeCodeCredentials(creds, e.srv.URL()+"/v1/oauth/token")
		if err != nil {
			t.Fatal(err)
		}
		c, err := sessionsapi.New(sessionsapi.Options{BaseURL: e.srv.URL(), OrgUUID: testOrg, Token: src, Clock: e.clock})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ListSessions(ctx); err != nil {
			t.Fatal(err)
		}
		e.srv.ExpireTokens()
		if _, err := c.ListSessions(ctx); err != nil {
			t.Fatalf("after the token expired: %v", err)
		}
		if n := e.srv.Refreshes(); n != 2 {
			t.Fatalf("%d refreshes, want 2", n)
		}
		if n := len(e.requests("/v1/sessions")); n != 3 {
			t.Fatalf("%d requests, want 3 (ok, refused, ok)", n)
		}
		if len(e.clock.waits()) != 0 {
			t.Fatalf("waited %v before retrying with a fresh token", e.clock.waits())
		}
	})
	t.Run("a fresh token that is refused too is final", func(t *testing.T) {
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{Token: &refusing{}})
		_, err := e.c.ListSessions(ctx)
		wantErr(t, err, sessionsapi.ErrUnauthorized)
		if n := len(e.requests("/v1/sessions")); n != 2 {
			t.Fatalf("%d requests, want 2", n)
		}
	})
	t.Run("a token file rotated after a 401 is used without a restart", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(path, []byte("old-token\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{Token: auth.TokenFile(path)})
		_, err := e.c.ListSessions(ctx)
		wantErr(t, err, sessionsapi.ErrUnauthorized)
		if n := len(e.requests("/v1/sessions")); n != 1 {
			t.Fatalf("%d requests with an unchanged file, want 1", n)
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(testToken), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.ListSessions(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a token source's failure is reported and nothing is sent", func(t *testing.T) {
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{Token: auth.TokenFile(filepath.Join(t.TempDir(), "missing"))})
		_, err := e.c.ListSessions(ctx)
		if err == nil || !strings.Contains(err.Error(), "getting a token") || len(e.srv.Requests()) != 0 {
			t.Fatalf("got %v with %d requests", err, len(e.srv.Requests()))
		}
	})
	t.Run("a stream refused with 401 can ask for a fresh token", func(t *testing.T) {
		e := setup(t, fakecloud.Options{}, sessionsapi.Options{Token: &refusing{}})
		h, err := e.c.StreamHeader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !e.c.RefreshCredentials(h) {
			t.Fatal("a refreshable source said no")
		}
		h2, _ := e.c.StreamHeader(ctx)
		if h2.Get("Authorization") == h.Get("Authorization") {
			t.Fatal("the same token again")
		}
		static := setup(t, fakecloud.Options{}, sessionsapi.Options{})
		if static.c.RefreshCredentials(h) {
			t.Fatal("a static token said it could refresh")
		}
	})
}

func TestPaging(t *testing.T) {
	ctx := context.Background()
	t.Run("sessions are followed across pages by after_id", func(t *testing.T) {
		var afters []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			after := r.URL.Query().Get("after_id")
			afters = append(afters, after)
			switch after {
			case "":
				fmt.Fprint(w, `{"data":[{"id":"s1"},{"id":"s2"}],"has_more":true,"first_id":"s1","last_id":"s2"}`)
			case "s2": // no last_id: the last item's id is the cursor
				fmt.Fprint(w, `{"data":[{"id":"s3","status":"idle"}],"has_more":true}`)
			default:
				fmt.Fprint(w, `{"data":[{"id":"s4","created_at":"not a time"}],"has_more":false}`)
			}
		}))
		defer srv.Close()
		c, _ := sessionsapi.New(sessionsapi.Options{BaseURL: srv.URL, Token: auth.StaticToken(testToken)})
		list, err := c.ListSessions(ctx)
		if err != nil || len(list) != 4 || list[2].Status != "idle" || list[3].ID != "s4" {
			t.Fatalf("ListSessions = %+v, %v", list, err)
		}
		if strings.Join(afters, ",") != ",s2,s3" {
			t.Fatalf("after_id sequence %q", afters)
		}
	})
	t.Run("a has_more that does not advance is an error, not a loop", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"data":[],"has_more":true}`)
		}))
		defer srv.Close()
		c, _ := sessionsapi.New(sessionsapi.Options{BaseURL: srv.URL, Token: auth.StaticToken(testToken)})
		_, err := c.ListSessions(ctx)
		wantErr(t, err, sessionsapi.ErrBadResponse)
	})
}

func TestResponseLimits(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		status  int
		body    func(w http.ResponseWriter)
		want    error
		message string
	}{
		{"a success larger than the cap is refused", 200, func(w http.ResponseWriter) {
			w.Write([]byte(`{"data":[`))
			w.Write(bytes.Repeat([]byte(" "), sessionsapi.MaxResponse))
			w.Write([]byte(`]}`))
		}, sessionsapi.ErrBadResponse, ""},
		{"a success that is not JSON is refused", 200, func(w http.ResponseWriter) { w.Write([]byte("<html>")) }, sessionsapi.ErrBadResponse, ""},
		{"a huge error body is cut, its message shortened", 400, func(w http.ResponseWriter) {
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"%s"}}`, strings.Repeat("m", 4<<20))
		}, sessionsapi.ErrBadRequest, ""},
		{"an error message is made printable and short", 400, func(w http.ResponseWriter) {
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"line one\nline two %s"}}`, strings.Repeat("x", 1000))
		}, sessionsapi.ErrBadRequest, "line one line two xxx"},
		{"an error without the envelope still has its status", 502, func(w http.ResponseWriter) { w.Write([]byte("bad gateway")) }, sessionsapi.ErrServer, "HTTP 502"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				tt.body(w)
			}))
			defer srv.Close()
			c, _ := sessionsapi.New(sessionsapi.Options{BaseURL: srv.URL, Token: auth.StaticToken(testToken), MaxAttempts: 1})
			_, err := c.ListSessions(ctx)
			wantErr(t, err, tt.want)
			if len(err.Error()) > 1200 || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("error of %d bytes: %.300s", len(err.Error()), err)
			}
		})
	}
}
