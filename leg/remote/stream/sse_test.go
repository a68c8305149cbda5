package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/leg/remote/wire"
)

// envelope is a v2 event as the stream and the events list carry it.
func envelope(seq int, payload string) string {
	return fmt.Sprintf(`{"event_id":"evt_%d","event_type":"assistant","sequence_num":%d,"source":"worker","payload":%s}`, seq, seq, payload)
}

func sseEvent(seq int) string {
	return fmt.Sprintf("id: %d\ndata: %s\n\n", seq, envelope(seq, assistant(fmt.Sprintf("evt_%d", seq), "hi")))
}

// sseReply is what the hand-made stream answers one request with.
type sseReply struct {
	status      int    // 0: 200
	contentType string // "": text/event-stream
	body        []string
	hold        bool // keep the response open after body
}

// sseServer answers the v2 stream's requests with replies, in order, and
// records each request.
type sseServer struct {
	*httptest.Server
	reqs chan *http.Request
}

func newSSEServer(t *testing.T, replies ...sseReply) *sseServer {
	s := &sseServer{reqs: make(chan *http.Request, len(replies)+1)}
	next := make(chan sseReply, len(replies))
	for _, r := range replies {
		next <- r
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.reqs <- r.Clone(context.Background())
		var rep sseReply
		select {
		case rep = <-next:
		default:
			rep = sseReply{hold: true} // out of script: an empty, open stream
		}
		if rep.contentType == "" {
			rep.contentType = "text/event-stream"
		}
		w.Header().Set("Content-Type", rep.contentType)
		if rep.status == 0 {
			rep.status = http.StatusOK
		}
		w.WriteHeader(rep.status)
		for _, b := range rep.body {
			io.WriteString(w, b)
		}
		w.(http.Flusher).Flush()
		if rep.hold {
			<-r.Context().Done()
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sseServer) request(t *testing.T) *http.Request {
	t.Helper()
	select {
	case r := <-s.reqs:
		return r
	case <-time.After(patience):
		t.Fatal("no request to the event stream")
	}
	return nil
}

// stubHistory knows some v2 events, but only answers once asked from
// minAfter on (it lags behind the stream), one event a page.
type stubHistory struct {
	known    map[uint64]string
	minAfter uint64
	maxSeq   uint64
}

func (h *stubHistory) EventsAfter(context.Context, string, string) ([]json.RawMessage, bool, error) {
	return nil, false, errors.New("not a WebSocket history")
}

func (h *stubHistory) CodeEventsAfter(_ context.Context, _ string, after uint64) ([]json.RawMessage, bool, error) {
	if after < h.minAfter {
		return nil, false, nil
	}
	for seq := after + 1; seq <= h.maxSeq; seq++ {
		if e, ok := h.known[seq]; ok {
			return []json.RawMessage{json.RawMessage(e)}, seq < h.maxSeq, nil
		}
	}
	return nil, false, nil
}

func sseConfig(url string) stream.Config {
	cfg := stream.NewConfig(url, "", "session_1")
	cfg.Transport = stream.TransportSSE
	cfg.Backoff = clock.Backoff{Initial: time.Millisecond, Max: time.Millisecond}
	return cfg
}

func TestTheEventStreamDeliversInSequenceOrder(t *testing.T) {
	hist34 := &stubHistory{minAfter: 2, maxSeq: 4, known: map[uint64]string{
		3: envelope(3, assistant("evt_3", "three")), 4: envelope(4, assistant("evt_4", "four")),
	}}
	type want struct {
		seq uint64
		src stream.Source
	}
	live := func(seqs ...uint64) []want {
		var w []want
		for _, s := range seqs {
			w = append(w, want{s, stream.SourceLive})
		}
		return w
	}
	tests := []struct {
		name  string
		body  []string
		hist  stream.History
		want  []want
		stats stream.Stats // only the counters checked
	}{
		{
			name:  "a jump is filled from History before the event after it is delivered",
			body:  []string{sseEvent(1), sseEvent(2), sseEvent(5), sseEvent(6)},
			hist:  hist34,
			want:  []want{{1, stream.SourceLive}, {2, stream.SourceLive}, {3, stream.SourceRecovered}, {4, stream.SourceRecovered}, {5, stream.SourceLive}, {6, stream.SourceLive}},
			stats: stream.Stats{Gaps: 1, Recovered: 2},
		},
		{
			name:  "a jump History cannot fill is delivered anyway and counted",
			body:  []string{sseEvent(1), sseEvent(2), sseEvent(5), sseEvent(6)},
			hist:  &stubHistory{},
			want:  live(1, 2, 5, 6),
			stats: stream.Stats{Gaps: 1},
		},
		{
			name:  "a jump without History is delivered and counted",
			body:  []string{sseEvent(1), sseEvent(3)},
			want:  live(1, 3),
			stats: stream.Stats{Gaps: 1},
		},
		{
			name:  "old and repeated sequence numbers are dropped",
			body:  []string{sseEvent(1), sseEvent(2), sseEvent(2), sseEvent(1), sseEvent(3)},
			want:  live(1, 2, 3),
			stats: stream.Stats{Duplicates: 2},
		},
		{
			name: "a sequenced keep_alive moves the sequence on without being delivered",
			body: []string{sseEvent(1), "id: 2\ndata: " + envelope(2, `{"type":"keep_alive"}`) + "\n\n", sseEvent(3)},
			want: live(1, 3),
		},
		{
			name: "comments and ping events are liveness only",
			body: []string{": ping\n\n", "event: ping\ndata: {}\n\n", sseEvent(1), ": ping\n\n", sseEvent(2)},
			want: live(1, 2),
		},
		{
			name:  "an event that does not decode leaves a gap History fills",
			body:  []string{sseEvent(1), "id: 2\ndata: {\"sequence_num\":2,\"payload\":[1]}\n\n", sseEvent(3)},
			hist:  &stubHistory{minAfter: 1, maxSeq: 2, known: map[uint64]string{2: envelope(2, assistant("evt_2", "two"))}},
			want:  []want{{1, stream.SourceLive}, {2, stream.SourceRecovered}, {3, stream.SourceLive}},
			stats: stream.Stats{Gaps: 1, Recovered: 1, Malformed: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSSEServer(t, sseReply{body: tt.body, hold: true})
			cfg := sseConfig(s.URL)
			cfg.History = tt.hist
			r := startStream(t, cfg)
			for i, w := range tt.want {
				u := r.next()
				if u.Seq != w.seq || u.Source != w.src {
					t.Fatalf("update %d is %d (%v), want %d (%v)", i, u.Seq, u.Source, w.seq, w.src)
				}
				if u.EventID != fmt.Sprintf("evt_%d", w.seq) || u.Message.Kind != wire.KindAssistant {
					t.Fatalf("update %d is %s %v", i, u.EventID, u.Message.Kind)
				}
			}
			// Stats move just after a delivery returns.
			last := tt.want[len(tt.want)-1].seq
			testutil.EventuallyWithin(t, patience, "the stats to match", func() bool {
				st := r.s.Stats()
				return st.Gaps == tt.stats.Gaps && st.Recovered == tt.stats.Recovered && st.Duplicates == tt.stats.Duplicates &&
					st.Malformed == tt.stats.Malformed && st.LastSeq == last
			})
		})
	}
}

func TestTheServersRetryFieldIsABackoffFloor(t *testing.T) {
	s := newSSEServer(t,
		sseReply{body: []string{"retry: 5000\n\n", sseEvent(1)}}, // then a clean end
		sseReply{body: []string{sseEvent(2)}, hold: true},
	)
	r := newRunning(t, sseConfig(s.URL))
	wakeOnReconnect(r)
	r.start()
	first := s.request(t)
	if first.Header.Get("Accept") != "text/event-stream" || first.URL.RawQuery != "" || first.Header.Get("Last-Event-ID") != "" {
		t.Errorf("first request %q with headers %v, want a fresh event stream", first.URL.RawQuery, first.Header)
	}
	if u := r.next(); u.Seq != 1 {
		t.Fatalf("first update has sequence %d", u.Seq)
	}
	l := r.link(stream.LinkReconnecting)
	var ce *stream.ConnError
	if !errors.As(l.Err, &ce) || ce.Cause != stream.CauseClosed {
		t.Errorf("failure %v, want a clean close", l.Err)
	}
	if l.Delay < 5*time.Second {
		t.Errorf("retry delay %v, want at least the server's retry: 5 s", l.Delay)
	}
	second := s.request(t)
	if second.URL.RawQuery != "from_sequence_num=1" || second.Header.Get("Last-Event-ID") != "1" {
		t.Errorf("reconnect asked %q with Last-Event-ID %q, want a resume from 1", second.URL.RawQuery, second.Header.Get("Last-Event-ID"))
	}
	if u := r.next(); u.Seq != 2 {
		t.Fatalf("second update has sequence %d", u.Seq)
	}
}

func TestTheServersRetryFieldIsCappedAtAnHour(t *testing.T) {
	// 9e12 ms is about 285 years: the stream would never come back.
	s := newSSEServer(t, sseReply{body: []string{"retry: 9000000000000\n\n", sseEvent(1)}}) // then a clean end
	r := startStream(t, sseConfig(s.URL))
	if u := r.next(); u.Seq != 1 {
		t.Fatalf("first update has sequence %d", u.Seq)
	}
	if l := r.link(stream.LinkReconnecting); l.Delay > time.Hour {
		t.Errorf("retry delay %v, want at most an hour", l.Delay)
	}
}

func TestAnAnswerThatIsNotAnEventStreamIsRetried(t *testing.T) {
	s := newSSEServer(t,
		sseReply{contentType: "application/json", body: []string{`{"data":[]}`}},
		sseReply{body: []string{sseEvent(1)}, hold: true},
	)
	r := newRunning(t, sseConfig(s.URL))
	wakeOnReconnect(r)
	r.start()
	l := r.link(stream.LinkReconnecting)
	var ce *stream.ConnError
	if !errors.As(l.Err, &ce) || ce.Cause != stream.CauseProtocol || l.Attempt != 1 {
		t.Fatalf("link %+v, want attempt 1 failed as not an event stream", l)
	}
	if u := r.next(); u.Seq != 1 {
		t.Fatalf("update has sequence %d", u.Seq)
	}
}
