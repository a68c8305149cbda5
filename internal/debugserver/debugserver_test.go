package debugserver

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestOnlyLoopbackAddressesAreTaken(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", true},
		{"localhost:0", true},
		{"[::1]:0", true},
		{"127.1.2.3:6060", true},
		{":6060", false}, // every interface
		{"0.0.0.0:6060", false},
		{"[::]:6060", false},
		{"192.168.1.10:6060", false},
		{"example.com:6060", false},
		{"127.0.0.1", false}, // no port
	} {
		err := CheckAddr(tc.addr)
		if (err == nil) != tc.ok {
			t.Errorf("CheckAddr(%q) = %v, want ok %v", tc.addr, err, tc.ok)
		}
		if !tc.ok {
			if _, err := Listen(tc.addr); err == nil {
				t.Errorf("Listen(%q) bound a non-loopback address", tc.addr)
			}
		}
	}
	if err := CheckAddr("10.0.0.1:1"); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("a private address: %v, want ErrNotLoopback", err)
	}
}

func TestTheServerAnswersWithProfiles(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer()
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	resp, err := http.Get("http://" + ln.Addr().String() + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "goroutine profile") {
		t.Fatalf("goroutine profile: %s\n%s", resp.Status, b)
	}
}
