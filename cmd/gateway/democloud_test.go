package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/remote/wire"
)

// demoBuffer is an io.Writer safe to read while the demo writes to it.
type demoBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (d *demoBuffer) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.b.Write(p)
}

func (d *demoBuffer) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.b.String()
}

func demoEnv() (*env, *demoBuffer, *demoBuffer) {
	out, errb := &demoBuffer{}, &demoBuffer{}
	return &env{stdout: out, stderr: errb, getenv: func(string) string { return "" }}, out, errb
}

func TestDemoCloudRefusesBadFlags(t *testing.T) {
	target := t.TempDir()
	link := filepath.Join(t.TempDir(), "state")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"an address on every interface is refused", []string{"--addr", "0.0.0.0:0"}, exitUsage, "loopback only"},
		{"a routable address is refused", []string{"--addr", "192.0.2.1:8080"}, exitUsage, "loopback only"},
		{"a host name other than localhost is refused", []string{"--addr", "example.com:0"}, exitUsage, "loopback only"},
		{"an address without a port is refused", []string{"--addr", "127.0.0.1"}, exitUsage, "loopback only"},
		{"an organisation that is not a uuid is refused", []string{"--org", "acme"}, exitUsage, "not a uuid"},
		{"a negative session count is refused", []string{"--sessions", "-1"}, exitUsage, "usage"},
		{"a stray argument is refused", []string{"now"}, exitUsage, "usage"},
		{"a state directory that is a symlink is refused", []string{"--state-dir", link}, exitError, "symlink"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, out, errb := demoEnv()
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // a refusal must not need a signal to return
			if code := run(ctx, e, append([]string{"demo-cloud"}, tc.args...)); code != tc.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.code, errb.String())
			}
			if !strings.Contains(errb.String(), tc.stderr) || out.String() != "" {
				t.Fatalf("stdout %q stderr %q, want %q", out.String(), errb.String(), tc.stderr)
			}
		})
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Fatalf("wrote through the symlink: %v", entries)
	}
}

var (
	demoURL   = regexp.MustCompile(`(?m)^demo cloud on (http://\S+) \(org (\S+)\)$`)
	demoToken = regexp.MustCompile(`(?m)^token file: (\S+)$`)
	demoTry   = regexp.MustCompile(`(?m)^try: gateway serve --remote-url (\S+) --remote-org (\S+) --remote-token-file (\S+) --remote-follow all --api 127\.0\.0\.1:8788$`)
)

// demo is a running demo-cloud, as its output describes it.
type demo struct {
	url, org, tokenFile, token string
}

func (d demo) request(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, d.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("Anthropic-Beta", "ccr-byoc-2025-07-29")
	req.Header.Set("X-Organization-Uuid", d.org)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestDemoCloud(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		sessions int
		inState  bool // the token file is under --state-dir
	}{
		{"with defaults it serves two sessions and keeps the token in a temporary directory", nil, 2, false},
		{"with --state-dir and --sessions the token file lives under DIR/demo-cloud", []string{"--sessions", "3", "--org", "0b6a1c3e-4f5d-4a7b-9c8d-1e2f3a4b5c6d"}, 3, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			state := filepath.Join(t.TempDir(), "state")
			if tc.inState {
				args = append(args, "--state-dir", state)
			}
			e, out, errb := demoEnv()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan int, 1)
			go func() { done <- run(ctx, e, append([]string{"demo-cloud"}, args...)) }()
			deadline := time.Now().Add(10 * time.Second)
			for !demoTry.MatchString(out.String()) {
				select {
				case code := <-done:
					t.Fatalf("exited %d: %s %s", code, out.String(), errb.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("no instructions printed: %q", out.String())
				}
				time.Sleep(5 * time.Millisecond)
			}
			printed := out.String()
			m, tf, try := demoURL.FindStringSubmatch(printed), demoToken.FindStringSubmatch(printed), demoTry.FindStringSubmatch(printed)
			if m == nil || tf == nil || try[1] != m[1] || try[2] != m[2] || try[3] != tf[1] {
				t.Fatalf("output does not agree with itself:\n%s", printed)
			}
			d := demo{url: m[1], org: m[2], tokenFile: tf[1]}
			if !strings.HasPrefix(d.url, "http://127.0.0.1:") {
				t.Fatalf("url %q is not loopback", d.url)
			}
			if tc.inState && d.tokenFile != filepath.Join(state, "demo-cloud", "token") {
				t.Fatalf("token file %q, want it under %s", d.tokenFile, state)
			}
			if tc.inState && d.org != "0b6a1c3e-4f5d-4a7b-9c8d-1e2f3a4b5c6d" {
				t.Fatalf("org %q", d.org)
			}

			t.Run("the token file is 0600 in a 0700 directory", func(t *testing.T) {
				for path, want := range map[string]os.FileMode{d.tokenFile: 0o600, filepath.Dir(d.tokenFile): 0o700} {
					fi, err := os.Lstat(path)
					if err != nil {
						t.Fatal(err)
					}
					if fi.Mode().Perm() != want {
						t.Fatalf("%s has mode %#o, want %#o", path, fi.Mode().Perm(), want)
					}
				}
				b, err := os.ReadFile(d.tokenFile)
				if err != nil || len(b) < 32 {
					t.Fatalf("token %q %v", b, err)
				}
				d.token = string(b)
			})
			t.Run("REST answers with the token and lists the demo sessions", func(t *testing.T) {
				status, body := d.request(t, "GET", "/v1/sessions", "")
				var p struct {
					Data []struct{ ID, Title string }
				}
				if status != 200 || json.Unmarshal(body, &p) != nil || len(p.Data) != tc.sessions {
					t.Fatalf("%d %s", status, body)
				}
				for i, s := range p.Data {
					if want := "demo " + string(rune('1'+i)); s.Title != want || !strings.Contains(printed, s.ID) {
						t.Fatalf("session %d: %+v, want %q and printed", i, s, want)
					}
				}
				saved := d.token
				d.token = "wrong"
				if status, _ := d.request(t, "GET", "/v1/sessions", ""); status != 401 {
					t.Fatalf("a wrong token got %d", status)
				}
				d.token = saved
			})
			t.Run("a posted user message gets the echo turn back", func(t *testing.T) {
				_, body := d.request(t, "GET", "/v1/sessions", "")
				var p struct{ Data []struct{ ID string } }
				json.Unmarshal(body, &p)
				id := p.Data[0].ID
				wsURL := "ws" + strings.TrimPrefix(d.url, "http") + "/v1/sessions/ws/" + id + "/subscribe?organization_uuid=" + d.org
				rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer rcancel()
				c, _, err := websocket.Dial(rctx, wsURL, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + d.token}}})
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseNow()
				if status, body := d.request(t, "POST", "/v1/sessions/"+id+"/events",
					`{"events":[{"type":"user","uuid":"u-demo","message":{"role":"user","content":"hello demo"}}]}`); status != 200 {
					t.Fatalf("post: %d %s", status, body)
				}
				for {
					_, b, err := c.Read(rctx)
					if err != nil {
						t.Fatal(err)
					}
					m, err := wire.Decode(b)
					if err != nil {
						t.Fatal(err)
					}
					if m.Kind == wire.KindResult {
						if m.Result.Result != "echo: hello demo" {
							t.Fatalf("result %q", m.Result.Result)
						}
						break
					}
				}
			})

			cancel()
			select {
			case code := <-done:
				if code != exitOK {
					t.Fatalf("exit %d: %s", code, errb.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the demo did not stop when its context ended")
			}
			t.Run("after a signal the fake is closed and the token file gone", func(t *testing.T) {
				if _, err := os.Lstat(d.tokenFile); !os.IsNotExist(err) {
					t.Fatalf("token file: %v", err)
				}
				if !tc.inState {
					if _, err := os.Lstat(filepath.Dir(d.tokenFile)); !os.IsNotExist(err) {
						t.Fatalf("temporary directory: %v", err)
					}
				}
				if resp, err := http.Get(d.url + "/v1/sessions"); err == nil {
					resp.Body.Close()
					t.Fatalf("still answering: %d", resp.StatusCode)
				}
			})
		})
	}
}

func TestDemoCloudJSONSaysWhatTheTryLineSays(t *testing.T) {
	e, out, errb := demoEnv()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, e, []string{"demo-cloud", "--json", "--sessions", "1"}) }()
	var info struct {
		URL       string   `json:"url"`
		Org       string   `json:"org"`
		TokenFile string   `json:"token_file"`
		Sessions  []string `json:"sessions"`
		ServeArgs []string `json:"serve_args"`
	}
	testutil.Eventually(t, "the demo prints its JSON", func() bool { return json.Unmarshal([]byte(out.String()), &info) == nil })
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := []string{"--remote-url", info.URL, "--remote-org", info.Org, "--remote-token-file", info.TokenFile, "--remote-follow", "all", "--api", "127.0.0.1:8788"}
	if !strings.HasPrefix(info.URL, "http://127.0.0.1:") || len(info.Sessions) != 1 || !slices.Equal(info.ServeArgs, want) {
		t.Fatalf("demo-cloud --json = %s", out.String())
	}
	if _, err := os.Stat(info.TokenFile); !os.IsNotExist(err) {
		t.Fatalf("the temporary token file outlived the demo: %v", err)
	}
}
