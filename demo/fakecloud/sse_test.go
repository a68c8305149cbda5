package fakecloud

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/leg/remote/wire"
)

func assistant(text string) string {
	return `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"` + text + `"}]}}`
}

// openStream opens the v2 events stream with extra query and headers; the
// body is closed when the test ends.
func openStream(t *testing.T, s *Server, id, query string, h http.Header, comments bool) *wire.SSEReader {
	t.Helper()
	req, err := http.NewRequest("GET", s.URL()+"/v1/code/sessions/"+id+"/events/stream"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = headers()
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return wire.NewSSEReader(resp.Body, wire.SSEOptions{Comments: comments})
}

// nextV2 reads the next non-comment event and decodes it.
func nextV2(t *testing.T, rd *wire.SSEReader) (wire.Event, wire.V2Event) {
	t.Helper()
	for {
		ev, err := rd.Next()
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		if ev.IsKeepAlive() {
			continue
		}
		v, err := wire.DecodeV2(ev)
		if err != nil {
			t.Fatalf("decode %q: %v", ev.Data, err)
		}
		return ev, v
	}
}

// seeded starts a fake with one session holding n emitted events.
func seeded(t *testing.T, opts Options, n int) (*Server, string) {
	t.Helper()
	opts.Token, opts.OrgUUID = token, org
	s := Start(t, opts)
	id := s.CreateSession("v2")
	for i := range n {
		if err := s.Emit(id, assistant("e"+strconv.Itoa(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	return s, id
}

func TestCodeSessionsListAndDetail(t *testing.T) {
	s := start(t)
	a, b := s.CreateSession("a"), s.CreateSession("b")
	u := s.URL() + "/v1/code/sessions"
	tests := []struct {
		name   string
		url    string
		status int
		check  func(t *testing.T, body string)
	}{
		{"the list returns the sessions in creation order", u, 200, nil},
		{"the detail of a session returns it", u + "/" + b, 200, nil},
		{"the detail of an unknown session is a 404", u + "/session_missing", 404, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var list struct{ Data []Session }
			var one Session
			out := any(&one)
			if tc.url == u {
				out = &list
			}
			resp := do(t, headers(), "GET", tc.url, "", out)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			switch {
			case tc.status != 200:
			case tc.url == u:
				if len(list.Data) != 2 || list.Data[0].ID != a || list.Data[1].ID != b {
					t.Fatalf("list: %+v", list.Data)
				}
			case one.ID != b || one.Title != "b":
				t.Fatalf("detail: %+v", one)
			}
		})
	}
}

func TestTheV2StreamSendsSequencedEvents(t *testing.T) {
	tests := []struct {
		name  string
		query string
		h     http.Header
		want  []uint64
	}{
		{"a fresh stream sees every event numbered 1 to n in order", "", nil, []uint64{1, 2, 3, 4}},
		{"a stream resumed by from_sequence_num sees only later events", "?from_sequence_num=2", nil, []uint64{3, 4}},
		{"a stream resumed by Last-Event-ID sees only later events", "", http.Header{"Last-Event-ID": {"3"}}, []uint64{4}},
		{"from_sequence_num wins over Last-Event-ID", "?from_sequence_num=1", http.Header{"Last-Event-ID": {"3"}}, []uint64{2, 3, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, id := seeded(t, Options{}, 3)
			do(t, headers(), "POST", s.URL()+"/v1/code/sessions/"+id+"/events",
				`{"events":[{"type":"user","message":{"role":"user","content":"hi"}}]}`, nil)
			rd := openStream(t, s, id, tc.query, tc.h, false)
			for _, want := range tc.want {
				ev, v := nextV2(t, rd)
				if v.SequenceNum != want || ev.ID != strconv.FormatUint(want, 10) {
					t.Fatalf("got seq %d id %q, want %d", v.SequenceNum, ev.ID, want)
				}
				wantType, wantSrc := "assistant", "worker"
				if want == 4 {
					wantType, wantSrc = "user", "client"
				}
				if v.EventType != wantType || v.Source != wantSrc || v.EventID == "" || v.CreatedAt == "" || v.Message.Type != wantType {
					t.Fatalf("event %d: %+v", want, v)
				}
			}
		})
	}
}

func TestTheV2StreamRefusesABadResumePoint(t *testing.T) {
	s, id := seeded(t, Options{}, 0)
	resp := do(t, headers(), "GET", s.URL()+"/v1/code/sessions/"+id+"/events/stream?from_sequence_num=x", "", nil)
	if resp.StatusCode != 400 {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
}

func TestTheV2StreamStaysOpen(t *testing.T) {
	t.Run("an event emitted while the stream is open arrives with the next number", func(t *testing.T) {
		s, id := seeded(t, Options{}, 2)
		rd := openStream(t, s, id, "", nil, false)
		nextV2(t, rd)
		nextV2(t, rd)
		if err := s.Emit(id, assistant("late")); err != nil {
			t.Fatal(err)
		}
		_, v := nextV2(t, rd)
		if v.SequenceNum != 3 || v.Message.Assistant == nil {
			t.Fatalf("got %+v", v)
		}
	})
	t.Run("an idle stream sends ping comments", func(t *testing.T) {
		s, id := seeded(t, Options{PingInterval: 5 * time.Millisecond}, 0)
		rd := openStream(t, s, id, "", nil, true)
		for range 2 {
			ev, err := rd.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ev.Comment || ev.Data != "ping" {
				t.Fatalf("got %+v, want a ping comment", ev)
			}
		}
	})
}

func TestFailureScriptsApplyToTheV2Surface(t *testing.T) {
	s, id := seeded(t, Options{}, 1)
	for _, tc := range []struct{ name, method, path string }{
		{"a scripted status answers the list", "GET", ""},
		{"a scripted status answers the detail", "GET", "/" + id},
		{"a scripted status answers the events post", "POST", "/" + id + "/events"},
		{"a scripted status answers the stream", "GET", "/" + id + "/events/stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.Fail(FailSpec{Path: "/v1/code/sessions" + tc.path, Status: 503})
			resp := do(t, headers(), tc.method, s.URL()+"/v1/code/sessions"+tc.path, `{"events":[{"type":"user"}]}`, nil)
			if resp.StatusCode != 503 {
				t.Fatalf("status %d, want 503", resp.StatusCode)
			}
		})
	}
	tests := []struct {
		name    string
		spec    FailSpec
		wantErr func(error) bool
	}{
		{"a Drop after two events cuts the stream off", FailSpec{Drop: true, After: 2},
			func(err error) bool { return err != nil && !errors.Is(err, io.EOF) }},
		{"a Close after two events ends the stream cleanly", FailSpec{Close: 1000, After: 2},
			func(err error) bool { return errors.Is(err, io.EOF) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, id := seeded(t, Options{}, 4)
			tc.spec.Path = "/v1/code/sessions/"
			s.Fail(tc.spec)
			rd := openStream(t, s, id, "", nil, false)
			nextV2(t, rd)
			nextV2(t, rd)
			if _, err := rd.Next(); !tc.wantErr(err) {
				t.Fatalf("third read: %v", err)
			}
			// The spec is used up: a new stream sees every event.
			rd = openStream(t, s, id, "?from_sequence_num=2", nil, false)
			if _, v := nextV2(t, rd); v.SequenceNum != 3 {
				t.Fatalf("after reconnect: %d", v.SequenceNum)
			}
		})
	}
	t.Run("Disconnect with code 0 cuts an open stream off", func(t *testing.T) {
		s, id := seeded(t, Options{}, 1)
		rd := openStream(t, s, id, "", nil, false)
		nextV2(t, rd)
		s.Disconnect(id, 0)
		if _, err := rd.Next(); err == nil || errors.Is(err, io.EOF) {
			t.Fatalf("read after disconnect: %v", err)
		}
	})
}
