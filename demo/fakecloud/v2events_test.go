package fakecloud

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/leg/remote/wire"
)

func TestTheV2EventsListPagesBySequenceNumber(t *testing.T) {
	s, id := seeded(t, Options{}, 5)
	u := s.URL() + "/v1/code/sessions/" + id + "/events"
	type pg struct {
		Data    []json.RawMessage
		HasMore bool   `json:"has_more"`
		FirstID string `json:"first_id"`
		LastID  string `json:"last_id"`
	}
	tests := []struct {
		name    string
		query   string
		status  int
		want    []uint64
		hasMore bool
	}{
		{"without a resume point every event comes back, oldest first", "", 200, []uint64{1, 2, 3, 4, 5}, false},
		{"from_sequence_num is exclusive: the page starts after it", "?from_sequence_num=2", 200, []uint64{3, 4, 5}, false},
		{"a limit cuts the page and says there is more", "?from_sequence_num=1&limit=2", 200, []uint64{2, 3}, true},
		{"the last page says there is no more", "?from_sequence_num=3&limit=2", 200, []uint64{4, 5}, false},
		{"a number at the end gives an empty page", "?from_sequence_num=5", 200, nil, false},
		{"a number beyond the end gives an empty page", "?from_sequence_num=99", 200, nil, false},
		{"a resume point that is not a number is a 400", "?from_sequence_num=x", 400, nil, false},
		{"a negative resume point is a 400", "?from_sequence_num=-1", 400, nil, false},
		{"a limit that is not positive is a 400", "?limit=0", 400, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p pg
			resp := do(t, headers(), "GET", u+tc.query, "", &p)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, tc.status, resp.Header.Get("X-Test-Body"))
			}
			var got []uint64
			var ids []string
			for _, raw := range p.Data {
				v, err := wire.DecodeV2(wire.Event{Data: string(raw)})
				if err != nil {
					t.Fatalf("decode %s: %v", raw, err)
				}
				if v.Message.Kind != wire.KindAssistant || v.Source != "worker" || v.EventID == "" {
					t.Fatalf("envelope %+v", v)
				}
				got = append(got, v.SequenceNum)
				ids = append(ids, v.EventID)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || p.HasMore != tc.hasMore {
				t.Fatalf("got %v more=%v, want %v more=%v", got, p.HasMore, tc.want, tc.hasMore)
			}
			if len(ids) > 0 && (p.FirstID != ids[0] || p.LastID != ids[len(ids)-1]) {
				t.Fatalf("first/last %q %q, want the page's event ids %v", p.FirstID, p.LastID, ids)
			}
		})
	}
	t.Run("the envelopes are the ones the stream sends", func(t *testing.T) {
		var p pg
		do(t, headers(), "GET", u+"?from_sequence_num=4", "", &p)
		rd := openStream(t, s, id, "?from_sequence_num=4", nil, false)
		ev, _ := nextV2(t, rd)
		if len(p.Data) != 1 || ev.Data != string(p.Data[0]) {
			t.Fatalf("list %s, stream %s", p.Data, ev.Data)
		}
	})
	t.Run("an unknown session is a 404", func(t *testing.T) {
		if resp := do(t, headers(), "GET", s.URL()+"/v1/code/sessions/session_nope/events", "", nil); resp.StatusCode != 404 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

func TestPingsAreAnsweredAndCounted(t *testing.T) {
	s := start(t)
	id, other := s.CreateSession("p"), s.CreateSession("q")
	tests := []struct {
		name   string
		id     string
		status int
	}{
		{"a ping to a session is answered with a small JSON body", id, 200},
		{"a second ping is counted too", id, 200},
		{"a ping to an unknown session is a 404", "session_nope", 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var body map[string]any
			resp := do(t, headers(), "POST", s.URL()+"/v1/code/sessions/"+tc.id+"/ping", "{}", &body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.status == 200 && (body["session_id"] != tc.id || body["server_time"] == "") {
				t.Fatalf("body %v", body)
			}
		})
	}
	if s.Pings(id) != 2 || s.Pings(other) != 0 || s.Pings("session_nope") != 0 {
		t.Fatalf("pings %d %d", s.Pings(id), s.Pings(other))
	}
}

func TestAPostedEventIsStoredOncePerUUID(t *testing.T) {
	for _, path := range []string{"/v1/sessions/", "/v1/code/sessions/"} {
		t.Run("on "+path, func(t *testing.T) {
			s := start(t)
			id := s.CreateSession("idem")
			c := dial(t, s, id, false)
			post := func(body string) []json.RawMessage {
				var p struct{ Data []json.RawMessage }
				if resp := do(t, headers(), "POST", s.URL()+path+id+"/events", body, &p); resp.StatusCode != 200 {
					t.Fatalf("post: %d %s", resp.StatusCode, resp.Header.Get("X-Test-Body"))
				}
				return p.Data
			}
			user := func(uuid, text string) string {
				return `{"type":"user","uuid":"` + uuid + `","message":{"role":"user","content":"` + text + `"}}`
			}
			first := post(`{"events":[` + user("u-1", "hello") + `]}`)

			t.Run("a retried post returns the stored copy and stores nothing", func(t *testing.T) {
				again := post(`{"events":[` + user("u-1", "changed on retry") + `]}`)
				if len(again) != 1 || string(again[0]) != string(first[0]) {
					t.Fatalf("retry answered %s, want the stored %s", again, first)
				}
				if len(s.Posted(id)) != 1 || s.Duplicates(id) != 1 {
					t.Fatalf("posted %d, duplicates %d", len(s.Posted(id)), s.Duplicates(id))
				}
			})
			t.Run("a batch mixing a known and a new uuid stores only the new one", func(t *testing.T) {
				got := post(`{"events":[` + user("u-1", "x") + `,` + user("u-2", "second") + `,` + user("u-2", "dup in batch") + `]}`)
				if len(got) != 3 || !strings.Contains(string(got[1]), "second") || string(got[2]) != string(got[1]) {
					t.Fatalf("answer %s", got)
				}
				if len(s.Posted(id)) != 2 || s.Duplicates(id) != 3 {
					t.Fatalf("posted %d, duplicates %d", len(s.Posted(id)), s.Duplicates(id))
				}
			})
			t.Run("events without a uuid are never duplicates", func(t *testing.T) {
				post(`{"events":[{"type":"user","message":{"role":"user","content":"a"}}]}`)
				post(`{"events":[{"type":"user","message":{"role":"user","content":"a"}}]}`)
				if len(s.Posted(id)) != 4 || s.Duplicates(id) != 3 {
					t.Fatalf("posted %d, duplicates %d", len(s.Posted(id)), s.Duplicates(id))
				}
			})
			t.Run("subscribers saw each stored event once", func(t *testing.T) {
				var got []string
				for range 4 {
					got = append(got, next(t, c).User.Content.Text())
				}
				if fmt.Sprint(got) != "[hello second a a]" {
					t.Fatalf("streamed %v", got)
				}
				send(t, c, `{"type":"keep_alive"}`) // its echo comes next if nothing else was streamed
				if m := next(t, c); m.Kind != wire.KindKeepAlive {
					t.Fatalf("then %s %s", m.Type, m.Raw)
				}
			})
			t.Run("a duplicate permission answer is not recorded twice", func(t *testing.T) {
				ans := `{"events":[{"type":"control_response","uuid":"a-1","response":{"subtype":"success","request_id":"r","response":{"behavior":"allow"}}}]}`
				post(ans)
				post(ans)
				if len(s.Answers(id)) != 1 {
					t.Fatalf("answers %+v", s.Answers(id))
				}
			})
		})
	}
}

func TestPostedControlRequestsAreRecorded(t *testing.T) {
	s := start(t)
	id := s.CreateSession("ctl")
	body := `{"events":[
		{"type":"control_request","request_id":"i-1","request":{"subtype":"interrupt"}},
		{"type":"control_request","request_id":"p-1","request":{"subtype":"set_permission_mode","mode":"plan"}},
		{"type":"control_request","request_id":"m-1","request":{"subtype":"set_model","model":"claude-opus-4-6"}}]}`
	do(t, headers(), "POST", s.URL()+"/v1/sessions/"+id+"/events", body, nil)
	c := dial(t, s, id, false)
	send(t, c, `{"request_id":"init","type":"control_request","request":{"subtype":"initialize"}}`)
	next(t, c)
	got := s.Controls(id)
	want := []string{"interrupt", "set_permission_mode", "set_model", "initialize"}
	if len(got) != len(want) {
		t.Fatalf("controls %+v", got)
	}
	for i, w := range want {
		if got[i].Subtype != w {
			t.Fatalf("control %d is %s, want %s", i, got[i].Subtype, w)
		}
	}
	if got[1].Mode != "plan" || got[2].Model != "claude-opus-4-6" {
		t.Fatalf("fields %+v", got)
	}
}
