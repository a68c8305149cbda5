package stream_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/leg/remote/wire"
)

func TestEveryMessageTypeIsDeliveredOnceInOrder(t *testing.T) {
	lines := []struct {
		line string
		kind wire.Kind
	}{
		{assistant("evt_a", "thinking about it"), wire.KindAssistant},
		{`{"type":"user","uuid":"evt_u","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}}`, wire.KindUser},
		{`{"type":"system","uuid":"evt_s","subtype":"init"}`, wire.KindSystem},
		{canUseTool("req_1"), wire.KindControlRequest},
		{`{"type":"control_cancel_request","request_id":"req_1"}`, wire.KindControlCancelRequest},
		{`{"type":"result","uuid":"evt_r","subtype":"success","is_error":false,"num_turns":1}`, wire.KindResult},
		{`{"type":"a_type_from_the_future","uuid":"evt_f","payload":1}`, wire.KindUnknown},
	}
	for _, tr := range transports {
		t.Run(string(tr)+" delivers each kind, keeps unknown ones raw and hides keep-alives", func(t *testing.T) {
			c := newCloud(t, fakecloud.Options{})
			r := startStream(t, c.config(tr))
			r.link(stream.LinkConnected)
			for _, l := range lines {
				c.emit(t, l.line)
				c.emit(t, `{"type":"keep_alive"}`)
			}
			want := c.stored(t)
			got := r.collect(want)
			for i, u := range got {
				if u.Message.Kind != lines[i].kind {
					t.Errorf("update %d is %v, want %v", i, u.Message.Kind, lines[i].kind)
				}
				// Emitted after the link was up, each comes live, or from
				// History if recovery on connect was still reading it.
				if u.Source != stream.SourceLive && u.Source != stream.SourceRecovered {
					t.Errorf("update %d came %v, want live or recovered", i, u.Source)
				}
				if len(u.Message.Raw) == 0 {
					t.Errorf("update %d lost its raw line", i)
				}
				if tr == stream.TransportSSE && u.Seq != uint64(i+1) {
					t.Errorf("update %d has sequence %d, want %d", i, u.Seq, i+1)
				}
				if tr == stream.TransportWS && u.Seq != 0 {
					t.Errorf("update %d has sequence %d on the WebSocket", i, u.Seq)
				}
			}
			if !strings.Contains(string(got[len(got)-1].Message.Raw), "payload") {
				t.Errorf("the unknown message's raw line lost its fields: %s", got[len(got)-1].Message.Raw)
			}
			r.sentinel(c, "evt_sentinel")
			if st := r.s.Stats(); st.Connects != 1 || st.Reconnects != 0 {
				t.Errorf("stats %+v, want one connect and no reconnect", st)
			}
			// The resume point moves just after a delivery returns.
			testutil.EventuallyWithin(t, patience, "the resume point to reach the sentinel", func() bool {
				st := r.s.Stats()
				if tr == stream.TransportSSE {
					return st.LastSeq == uint64(len(lines)+1)
				}
				return st.LastEventID == "evt_sentinel"
			})
		})
	}
}

func TestInitializeIsSentAndItsPendingPromptsDelivered(t *testing.T) {
	tests := []struct {
		name    string
		history bool
		// want lists the updates after connecting: kind/source pairs.
		want []stream.Source
		kind []wire.Kind
	}{
		{
			"without History a prompt waiting before we connected arrives as pending, after the answer to initialize",
			false,
			[]stream.Source{stream.SourceLive, stream.SourcePending},
			[]wire.Kind{wire.KindControlResponse, wire.KindControlRequest},
		},
		{
			"with History the prompt is recovered first and its pending copy is not delivered again",
			true,
			[]stream.Source{stream.SourceRecovered, stream.SourceLive},
			[]wire.Kind{wire.KindControlRequest, wire.KindControlResponse},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCloud(t, fakecloud.Options{})
			c.emit(t, canUseTool("req_waiting"))
			cfg := c.config(stream.TransportWS)
			if !tt.history {
				cfg.History = nil
			}
			r := startStream(t, cfg)
			for i := range tt.want {
				u := r.next()
				if u.Source != tt.want[i] || u.Message.Kind != tt.kind[i] {
					t.Fatalf("update %d is %v/%v, want %v/%v", i, u.Message.Kind, u.Source, tt.kind[i], tt.want[i])
				}
				if u.Message.Kind == wire.KindControlRequest {
					cr := u.Message.ControlRequest
					if cr.Subtype != wire.SubtypeCanUseTool || cr.RequestID != "req_waiting" || cr.ToolName != "Bash" {
						t.Fatalf("prompt decoded as %+v", cr)
					}
				}
				if u.Message.Kind == wire.KindControlResponse && len(u.Message.ControlResponse.Pending) != 1 {
					t.Fatalf("the answer to initialize lists %d pending prompts, want 1", len(u.Message.ControlResponse.Pending))
				}
			}
			r.sentinel(c, "evt_sentinel")
			controls := c.Controls(c.sid)
			if len(controls) != 1 || controls[0].Subtype != "initialize" || !strings.HasPrefix(controls[0].RequestID, "init-") {
				t.Fatalf("the server received %+v, want one initialize", controls)
			}
		})
	}
}

func TestNoInitializeIsSentWhenTurnedOff(t *testing.T) {
	c := newCloud(t, fakecloud.Options{})
	cfg := c.config(stream.TransportWS)
	cfg.Initialize = false
	r := startStream(t, cfg)
	r.link(stream.LinkConnected)
	c.emit(t, assistant("evt_1", "hi"))
	if u := r.next(); u.EventID != "evt_1" {
		t.Fatalf("first update %s %s, want evt_1 with no answer to initialize before it", u.Message.Type, u.EventID)
	}
	if n := len(c.Controls(c.sid)); n != 0 {
		t.Fatalf("the server received %d control requests, want none", n)
	}
}

func TestWithoutAResumePointTheWholeHistoryComesFirst(t *testing.T) {
	for _, tr := range transports {
		t.Run(string(tr)+" recovers every stored event before live ones", func(t *testing.T) {
			c := newCloud(t, fakecloud.Options{})
			for _, id := range []string{"evt_1", "evt_2", "evt_3"} {
				c.emit(t, assistant(id, "before"))
			}
			r := startStream(t, c.config(tr))
			for _, u := range r.collect(c.stored(t)) {
				if u.Source != stream.SourceRecovered {
					t.Errorf("%s came %v, want recovered", u.EventID, u.Source)
				}
			}
			r.sentinel(c, "evt_live")
			if st := r.s.Stats(); st.Recovered != 3 {
				t.Errorf("Recovered = %d, want 3", st.Recovered)
			}
		})
	}
}

func TestAResumePointSkipsWhatTheCallerHas(t *testing.T) {
	for _, tr := range transports {
		t.Run(string(tr)+" delivers only what came after the resume point", func(t *testing.T) {
			c := newCloud(t, fakecloud.Options{})
			for _, id := range []string{"evt_1", "evt_2", "evt_3", "evt_4", "evt_5"} {
				c.emit(t, assistant(id, "stored"))
			}
			cfg := c.config(tr)
			cfg.ResumeAfterID, cfg.ResumeAfterSeq = "evt_3", 3
			r := startStream(t, cfg)
			got := r.collect([]string{"evt_4", "evt_5"})
			if tr == stream.TransportSSE && (got[0].Seq != 4 || got[1].Seq != 5) {
				t.Errorf("sequences %d, %d, want 4, 5", got[0].Seq, got[1].Seq)
			}
			r.sentinel(c, "evt_live")
			queries, lastIDs := c.streamRequests(tr)
			switch tr {
			case stream.TransportWS:
				if !strings.Contains(queries[0], "replay=true") {
					t.Errorf("the first subscribe asked %q, want replay=true with a resume point", queries[0])
				}
			case stream.TransportSSE:
				if !strings.Contains(queries[0], "from_sequence_num=3") || lastIDs[0] != "3" {
					t.Errorf("the stream was opened with %q and Last-Event-ID %q, want 3", queries[0], lastIDs[0])
				}
			}
		})
	}
}

func TestAResumePointHistoryDoesNotKnowIsCountedAsAGap(t *testing.T) {
	c := newCloud(t, fakecloud.Options{})
	c.emit(t, assistant("evt_1", "stored"))
	cfg := c.config(stream.TransportWS)
	cfg.ResumeAfterID = "evt_never_was"
	r := startStream(t, cfg)
	// The answer to initialize comes after recovery: what is emitted next
	// is live, not taken for history before the resume point.
	if u := r.next(); u.Message.Kind != wire.KindControlResponse {
		t.Fatalf("first update is %v, want the answer to initialize", u.Message.Kind)
	}
	r.sentinel(c, "evt_live")
	if st := r.s.Stats(); st.Gaps != 1 {
		t.Fatalf("Gaps = %d, want 1", st.Gaps)
	}
}

func TestAReconnectAsksForReplayAndResumes(t *testing.T) {
	for _, tr := range transports {
		t.Run(string(tr)+" resumes after what it delivered", func(t *testing.T) {
			c := newCloud(t, fakecloud.Options{})
			r := startStream(t, c.config(tr))
			r.link(stream.LinkConnected)
			c.emit(t, assistant("evt_1", "one"))
			c.emit(t, assistant("evt_2", "two"))
			r.collect([]string{"evt_1", "evt_2"})
			c.Disconnect(c.sid, 0)
			r.link(stream.LinkReconnecting)
			r.link(stream.LinkConnected)
			r.sentinel(c, "evt_3")
			queries, lastIDs := c.streamRequests(tr)
			if len(queries) != 2 {
				t.Fatalf("%d connections, want 2", len(queries))
			}
			switch tr {
			case stream.TransportWS:
				if strings.Contains(queries[0], "replay") || !strings.Contains(queries[1], "replay=true") {
					t.Errorf("queries %q, want replay=true on the reconnect only", queries)
				}
				if !strings.Contains(queries[1], "organization_uuid="+org) {
					t.Errorf("query %q lost the organisation", queries[1])
				}
			case stream.TransportSSE:
				if queries[0] != "" || queries[1] != "from_sequence_num=2" || lastIDs[1] != "2" {
					t.Errorf("queries %q and Last-Event-IDs %q, want a resume from 2 on the reconnect only", queries, lastIDs)
				}
			}
			if st := r.s.Stats(); st.Connects != 2 || st.Reconnects != 1 {
				t.Errorf("stats %+v, want 2 connects, 1 reconnect", st)
			}
		})
	}
}

func TestASlowConsumerLosesNothing(t *testing.T) {
	// The fake sheds a subscriber whose queue of 8 is full with 1008; the
	// stream stops reading while nobody takes its updates, so it is shed,
	// and replay plus recovery must make up for it.
	c := newCloud(t, fakecloud.Options{QueueLen: 8})
	r := startStream(t, c.config(stream.TransportWS))
	r.link(stream.LinkConnected)
	big := strings.Repeat("x", 32<<10)
	for i := range 200 {
		c.emit(t, assistant(idN(i), big))
	}
	r.collect(c.stored(t))
	r.sentinel(c, "evt_sentinel")
	t.Logf("stats after the slow consumer: %+v", r.s.Stats())
}

func idN(i int) string { return fmt.Sprintf("evt_%04d", i) }

func TestSeenUUIDsSpareTheHistoryReadAtAWebSocketResume(t *testing.T) {
	c := newCloud(t, fakecloud.Options{})
	var seen []string
	for i := range 250 { // three pages of History
		seen = append(seen, idN(i))
		c.emit(t, assistant(idN(i), "stored"))
	}
	cfg := c.config(stream.TransportWS)
	h := cfg.History.(*restHistory)
	cfg.ResumeAfterID, cfg.Seen = seen[len(seen)-1], seen
	r := startStream(t, cfg)
	c.emit(t, assistant("evt_live", "live"))
	r.collect([]string{"evt_live"}) // the server's replay of the 250 is not delivered
	if n := h.calls.Load(); n > 1 {
		t.Errorf("History was read %d times; with the seen uuids given, one read after the resume point is enough", n)
	}
}
