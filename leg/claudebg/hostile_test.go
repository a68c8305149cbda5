package claudebg_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/leg/claudebg"
	"github.com/sessiongateway/gateway/message"
)

// scripted is a daemon at the control socket of a fresh config dir that
// answers each request's op with what script writes: a hostile or odd
// daemon the stand-in does not play. A nil answer holds the connection
// open, saying nothing, until the test ends.
func scripted(t *testing.T, script func(op string, req map[string]any) []string) (config string, pings *atomic.Int32) {
	t.Helper()
	config = configDir(t)
	sock, _ := claudebg.SocketPath(config)
	for _, dir := range []string{filepath.Dir(filepath.Dir(sock)), filepath.Dir(sock)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	pings = &atomic.Int32{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(done); ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				line, err := bufio.NewReader(c).ReadBytes('\n')
				if err != nil {
					return
				}
				var req map[string]any
				_ = json.Unmarshal(line, &req)
				op, _ := req["op"].(string)
				if op == "ping" {
					pings.Add(1)
				}
				lines := script(op, req)
				if lines == nil {
					<-done
					return
				}
				for _, l := range lines {
					if _, err := c.Write([]byte(l + "\n")); err != nil {
						return
					}
				}
			})
		}
	})
	return config, pings
}

const pingV1 = `{"ok":true,"op":"ping","version":"2.1.332","proto":1}`

func TestADaemonUpgradedUnderTheGatewayIsAskedItsVersionAgain(t *testing.T) {
	config, pings := scripted(t, func(op string, _ map[string]any) []string {
		if op == "ping" {
			return []string{pingV1}
		}
		return []string{`{"ok":false,"code":"EPROTO","error":"proto mismatch","serverProto":3,"serverVersion":"2.2.0"}`}
	})
	l, _ := newLeg(t, config)
	for i := 1; i <= 2; i++ {
		_, err := l.Sessions(context.Background())
		var pe *claudebg.ProtoError
		if !errors.As(err, &pe) || pe.ServerProto != "3" || pe.ServerVersion != "2.2.0" {
			t.Fatalf("Sessions: %v, want a ProtoError for version 3", err)
		}
		if got := pings.Load(); got != int32(i) {
			t.Fatalf("after %d EPROTO answers the daemon was pinged %d times", i, got)
		}
	}
}

func TestAPingThatNamesNoVersionIsNotGuessedAt(t *testing.T) {
	config, _ := scripted(t, func(op string, _ map[string]any) []string {
		if op == "ping" {
			return []string{`{"ok":true,"op":"ping","version":"9.9.9"}`}
		}
		return []string{`{"ok":true,"op":"list","jobs":[]}`}
	})
	l, _ := newLeg(t, config)
	var pe *claudebg.ProtoError
	if _, err := l.Sessions(context.Background()); !errors.As(err, &pe) || !strings.Contains(err.Error(), "control protocol (none)") {
		t.Fatalf("Sessions: %v", err)
	}
}

func TestWhatTheDaemonWritesIsCheckedBeforeItIsUsed(t *testing.T) {
	good := `{"short":"964dbf81","sessionId":"964dbf81-e84c","cwd":"/tmp","name":"\u001b[31mred\u001b[0m agent","tempo":"idle"}`
	tests := []struct {
		name    string
		list    []string
		listed  int
		dropped uint64
		wantErr string
	}{
		{"a record that does not decode or has a bad short is dropped, counted", []string{
			`{"ok":true,"op":"list","jobs":[` + good + `,{"short":"NOTHEX!!"},{"short":"12345678","pid":"x"},5]}`}, 1, 3, ""},
		{"an answer that is not JSON is an error", []string{`not json`}, 0, 0, "not one"},
		{"an answer with no ok is an error", []string{`{"op":"list","jobs":[]}`}, 0, 0, "not one"},
		{"an answer over 1 MiB is an error", []string{`{"ok":true,"jobs":["` + strings.Repeat("x", claudebg.MaxLine) + `"]}`}, 0, 0, "over 1 MiB"},
		{"no answer before the connection closes is an error", []string{}, 0, 0, "unexpected EOF"},
		{"a refusal is reported in the daemon's words, cleaned", []string{`{"ok":false,"code":"EUNKNOWN","error":"boom\u001b[2J"}`}, 0, 0, "refused list: boom (EUNKNOWN)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config, _ := scripted(t, func(op string, _ map[string]any) []string {
				if op == "ping" {
					return []string{pingV1}
				}
				return tt.list
			})
			l, _ := newLeg(t, config)
			ss, err := l.Sessions(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Sessions: %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(ss) != tt.listed || l.Stats().Dropped != tt.dropped {
				t.Fatalf("Sessions: %v %v, stats %+v; want %d listed, %d dropped", ss, err, l.Stats(), tt.listed, tt.dropped)
			}
			if ss[0].Name != "red agent" {
				t.Fatalf("name %q, want its escapes removed", ss[0].Name)
			}
		})
	}
}

func TestADaemonThatNeverAnswersCostsNoMoreThanTheCallersPatience(t *testing.T) {
	config, _ := scripted(t, func(op string, _ map[string]any) []string {
		if op == "ping" {
			return []string{pingV1}
		}
		return nil // hold the connection, say nothing
	})
	l, _ := newLeg(t, config)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := l.Sessions(ctx); err == nil {
		t.Fatal("Sessions of a silent daemon succeeded")
	}
	rc, err := l.Send(ctx, message.Message{ID: "m", To: claudebg.AddressPrefix + "964dbf81", Body: "hi"})
	if err != nil || rc.Status != message.StatusFailed {
		t.Fatalf("Send to a silent daemon: %+v %v", rc, err)
	}
}

func TestJunkFramesOfASubscriptionAreDroppedCountedAndTheStreamGoesOn(t *testing.T) {
	rec := `{"short":"964dbf81","sessionId":"964dbf81-e84c","tempo":"idle"}`
	var subscribed atomic.Bool
	config, _ := scripted(t, func(op string, _ map[string]any) []string {
		switch op {
		case "ping":
			return []string{pingV1}
		case "list":
			return []string{`{"ok":true,"op":"list","jobs":[` + rec + `]}`}
		case "subscribe":
			if subscribed.Swap(true) { // once: later polls find it gone
				return []string{`{"ok":false,"code":"ENOJOB","error":"session not found"}`}
			}
			return []string{`{"type":"snapshot","record":` + rec + `,"streamTail":[]}`,
				`not json`, `{"type":"nonsense"}`, `{"type":"state","patch":{"tempo":5}}`, `{"type":"state"}`,
				`{"type":"stream","line":"` + strings.Repeat("y", claudebg.MaxLine) + `"}`,
				`{"type":"stream","line":"still here"}`, `{"type":"settled","outcome":"done"}`}
		}
		return []string{`{"ok":false,"code":"EUNKNOWN","error":"no"}`}
	})
	l, _ := newLeg(t, config)
	r := &rig{l: l, events: make(chan message.Event, 1024)}
	running(t, l, r.events)
	addr := claudebg.AddressPrefix + "964dbf81"
	r.next(t, addr, claudebg.KindTerminal, "still here")
	r.next(t, addr, claudebg.KindSettled, "done")
	if got := l.Stats().Dropped; got != 5 {
		t.Fatalf("dropped %d, want 5 (not json, unknown type, two bad patches, one line too long)", got)
	}
}

func TestAStreamTheDaemonClosedIsFollowedAgainWithoutItsReplay(t *testing.T) {
	rec := `{"short":"964dbf81","sessionId":"964dbf81-e84c","tempo":"idle"}`
	tails := make(chan any, 8)
	var n atomic.Int32
	config, _ := scripted(t, func(op string, req map[string]any) []string {
		switch op {
		case "ping":
			return []string{pingV1}
		case "list":
			return []string{`{"ok":true,"op":"list","jobs":[` + rec + `]}`}
		case "subscribe":
			select {
			case tails <- req["tail"]:
			default: // later polls' subscriptions are not checked
			}
			if n.Add(1) > 1 {
				return []string{`{"type":"snapshot","record":` + rec + `,"streamTail":["old"]}`, `{"type":"settled","outcome":"done"}`}
			}
			return []string{`{"type":"snapshot","record":` + rec + `,"streamTail":["old"]}`} // then the daemon hangs up
		}
		return []string{`{"ok":false,"code":"EUNKNOWN","error":"no"}`}
	})
	l, _ := newLeg(t, config)
	r := &rig{l: l, events: make(chan message.Event, 1024)}
	running(t, l, r.events)
	addr := claudebg.AddressPrefix + "964dbf81"
	r.next(t, addr, claudebg.KindTerminal, "old")
	r.next(t, addr, claudebg.KindState, "the daemon closed the agent's stream")
	r.next(t, addr, claudebg.KindSettled, "done")
	if first, again := <-tails, <-tails; first != float64(claudebg.DefaultTail) || again != float64(0) {
		t.Fatalf("subscribed with tail %v, then %v; want %d, then 0", first, again, claudebg.DefaultTail)
	}
}
