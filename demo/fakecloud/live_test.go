package fakecloud

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
)

func TestLiveCountsTheOpenWebSockets(t *testing.T) {
	s := start(t)
	id := s.CreateSession("live")
	count := func() map[string]int {
		req, _ := http.NewRequest("GET", s.URL()+LivePath, nil)
		req.Header.Set("Cookie", "sessionKey=sk-abc")
		for _, h := range DefaultRequiredHeaders {
			req.Header.Set(h, "x")
		}
		req.Header.Set("x-organization-uuid", org)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]int
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v", resp.Status, err)
		}
		return m
	}
	if m := count(); m["websockets"] != 0 || m["event_streams"] != 0 {
		t.Fatalf("before any: %v", m)
	}
	c := dial(t, s, id, false)
	if m := count(); m["websockets"] != 1 {
		t.Fatalf("with one open: %v", m)
	}
	c.CloseNow()
	testutil.EventuallyWithin(t, 10*time.Second, "the socket is no longer counted", func() bool { return count()["websockets"] == 0 })
}

func TestEnvelopeStringsAreSpelledAsJSONMarshalDoes(t *testing.T) {
	for _, s := range []string{"", "evt_1", "assistant", `q"uote`, `back\slash`, "<tag>&", "tab\t", "é", "\u2028", "bad\xff"} {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}
