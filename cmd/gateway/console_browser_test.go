package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
)

// browserTools finds Chromium and playwright-core (installed by
// .ci/install-interop.sh); without them the test is skipped, or fails
// under testutil.Strict.
func browserTools(t *testing.T) (chromium, playwright string) {
	t.Helper()
	cache := os.Getenv("GATEWAY_INTEROP_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "gateway-interop")
	}
	playwright = filepath.Join(cache, "playwright", "node_modules", "playwright-core")
	chromium = os.Getenv("GATEWAY_CHROMIUM")
	if chromium == "" {
		chromium, _ = exec.LookPath("chromium")
	}
	_, err := os.Stat(filepath.Join(playwright, "package.json"))
	_, nodeErr := exec.LookPath("node")
	testutil.Need(t, chromium != "" && err == nil && nodeErr == nil,
		"the browser test needs chromium, node and playwright-core in %s (.ci/install-interop.sh installs them)", playwright)
	return chromium, playwright
}

// cutProxy forwards loopback TCP to the gateway's API, so the test can drop
// the browser's connections (the event stream's included) and refuse new
// ones for a while.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func newCutProxy(t *testing.T) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, conns: map[net.Conn]bool{}}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.cut || p.target == "" {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.conns[c] = true
			target := p.target
			p.mu.Unlock()
			p.wg.Go(func() { p.pipe(c, target) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		p.setCut(true)
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) pipe(c net.Conn, target string) {
	defer c.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.conns[up] = true
	p.mu.Unlock()
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// setCut drops every connection and refuses new ones, or accepts again.
func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
	}
}

// TestTheConsoleInAHeadlessBrowser drives the console in Chromium at phone
// and desktop sizes: pairing with the printed link, a question without
// options shown (and denied) without hiding the next, a question answered by
// tapping options, a tool offering no suggestion allowed (no "always
// allow" invented), a tool allowed with the one suggestion it offered, each
// answer shown with what was sent and who answered, a plan approved with a mode, a
// message sent from a session's send box, a held message released, and the
// event stream dropped and resumed without losing an event. The script
// (testdata/console_browser.js) asks this test for each step over a loopback
// "director" and the test checks what the fakes received.
func TestTheConsoleInAHeadlessBrowser(t *testing.T) {
	chromium, playwright := browserTools(t)
	shots := os.Getenv("GATEWAY_CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = filepath.Join(os.TempDir(), "gateway-console-screenshots")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", shots)

	cloud := fakecloud.Start(t, fakecloud.Options{Token: e2eToken, OrgUUID: e2eOrg, Echo: true})
	sid := cloud.CreateSession("fix the flaky test")
	root := t.TempDir()
	tokenFile := filepath.Join(root, "token")
	if err := os.WriteFile(tokenFile, []byte(e2eToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ro := &remoteOpts{url: cloud.URL(), org: e2eOrg, tokenFile: tokenFile, follow: multi{"all"}, transport: "ws"}
	if err := ro.check(); err != nil {
		t.Fatal(err)
	}
	ro.tune = func(c *stream.Config) {
		c.Backoff = clock.Backoff{Initial: 20 * time.Millisecond, Max: 20 * time.Millisecond}
		c.MaxRetries = -1
	}
	proxy := newCutProxy(t)
	// The read-only sign-in goes through a reverse proxy that serves the
	// gateway under /gw/, as one in front of it may.
	prefixed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, root, func(c *serveConfig) {
		c.noQwen, c.bridge, c.remote = true, false, ro
		c.apiAddr, c.hosts = "127.0.0.1:0", []string{proxy.ln.Addr().String(), prefixed.Addr().String()}
	})
	t.Cleanup(func() { g.Stop(t) })
	apiAddr := regexp.MustCompile(`^http://([^/]+)/`).FindStringSubmatch(pairLink(t, g.StateDir, "", ""))
	if apiAddr == nil {
		t.Fatal("no API address in the pairing link")
	}
	proxy.mu.Lock()
	proxy.target = apiAddr[1]
	proxy.mu.Unlock()
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(&url.URL{Scheme: "http", Host: apiAddr[1]})
		r.Out.Host = r.In.Host // the gateway checks the Host the browser used
	}}
	prefixSrv := &http.Server{Handler: http.StripPrefix("/gw", rp), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = prefixSrv.Serve(prefixed) }()
	t.Cleanup(func() { _ = prefixSrv.Close() })
	gwAddr := gatewayAddress(t, g)
	peers := map[string]*fakeclaude.Peer{} // held message id -> its sender, a new peer each time

	steps := map[string]func(args map[string]string) (any, error){
		"pair": func(a map[string]string) (any, error) {
			if a["read_only"] != "" {
				return map[string]string{"url": pairLink(t, g.StateDir, "http://"+prefixed.Addr().String()+"/gw", "")}, nil
			}
			return map[string]string{"url": pairLink(t, g.StateDir, "http://"+proxy.ln.Addr().String(), "approve,send")}, nil
		},
		"question": func(map[string]string) (any, error) {
			spec := fakecloud.AskPrompt()
			spec.ToolUseID = fmt.Sprintf("toolu_console_%d", time.Now().UnixNano())
			rid, err := cloud.Prompt(sid, spec)
			return map[string]string{"rid": rid, "tool_use_id": spec.ToolUseID}, err
		},
		"hostile-question": func(map[string]string) (any, error) {
			spec := fakecloud.AskPrompt(fakecloud.Question{Question: "Pick from nothing?", Header: "Hostile"}) // options: null
			rid, err := cloud.Prompt(sid, spec)
			return map[string]string{"rid": rid}, err
		},
		"check-question": func(a map[string]string) (any, error) {
			// Exactly the question's input with the answers added, and nothing else.
			var in map[string]any
			_ = json.Unmarshal(fakecloud.AskPrompt().Input, &in)
			in["answers"] = map[string]any{"Which approach?": "Option B", "Which features?": []any{"Logging", "Metrics"}}
			want := map[string]any{"behavior": "allow", "updatedInput": in, "toolUseID": a["tool_use_id"]}
			return nil, checkAnswer(cloud, sid, a["rid"], func(got map[string]any) error {
				if !reflect.DeepEqual(got, want) {
					g, _ := json.Marshal(got)
					w, _ := json.Marshal(want)
					return fmt.Errorf("the control_response's response was\n%s\nwant\n%s", g, w)
				}
				return nil
			})
		},
		"bash": func(map[string]string) (any, error) {
			rid, err := cloud.Prompt(sid, fakecloud.BashPrompt("make test"))
			return map[string]string{"rid": rid}, err
		},
		"bash-suggested": func(map[string]string) (any, error) {
			spec := fakecloud.BashPrompt("npm test")
			spec.Suggestions = fakecloud.SeedSuggestions("npm test")[:1]
			rid, err := cloud.Prompt(sid, spec)
			return map[string]string{"rid": rid}, err
		},
		"check-bash": func(a map[string]string) (any, error) {
			// A plain allow adds no rule the session did not offer.
			return nil, checkAnswer(cloud, sid, a["rid"], func(got map[string]any) error {
				if got["behavior"] != "allow" || got["updatedPermissions"] != nil {
					return fmt.Errorf("the answer was %v, want allow with no permission update", got)
				}
				return nil
			})
		},
		"check-bash-suggested": func(a map[string]string) (any, error) {
			// The one suggestion offered goes back exactly as offered.
			var want any
			_ = json.Unmarshal(fakecloud.SeedSuggestions("npm test")[0], &want)
			return nil, checkAnswer(cloud, sid, a["rid"], func(got map[string]any) error {
				if got["behavior"] != "allow" || !reflect.DeepEqual(got["updatedPermissions"], []any{want}) {
					return fmt.Errorf("the answer was %v, want allow with the offered suggestion %v", got, want)
				}
				return nil
			})
		},
		"answered": func(a map[string]string) (any, error) {
			// Who answered, as the gateway recorded it, for the page to show.
			out, errOut, code := runCLI(t, g.StateDir, "permissions", "--all", "--json")
			var ps []message.PermissionRequest
			if code != exitOK || json.Unmarshal([]byte(out), &ps) != nil {
				return nil, fmt.Errorf("permissions --all: exit %d: %s%s", code, out, errOut)
			}
			for _, p := range ps {
				if p.RequestID == a["rid"] {
					return map[string]string{"id": p.ID, "answered_by": p.AnsweredBy}, nil
				}
			}
			return nil, fmt.Errorf("no prompt with request id %s in %s", a["rid"], out)
		},
		"plan": func(map[string]string) (any, error) {
			rid, err := cloud.Prompt(sid, fakecloud.PlanPrompt("## Plan\n\n1. fix the **race**\n2. run `go test -race`\n\n<script>alert(1)</script>"))
			return map[string]string{"rid": rid}, err
		},
		"check-plan": func(a map[string]string) (any, error) {
			// The mode switch rides in the same answer, a setMode update.
			return nil, checkAnswer(cloud, sid, a["rid"], func(got map[string]any) error {
				ups, _ := json.Marshal(got["updatedPermissions"])
				if got["behavior"] != "allow" || !strings.Contains(string(ups), `"setMode"`) || !strings.Contains(string(ups), `"acceptEdits"`) {
					return fmt.Errorf("the answer was %v, want allow with a setMode acceptEdits update", got)
				}
				return nil
			})
		},
		"check-sent": func(a map[string]string) (any, error) {
			if !testutil.Within(10*time.Second, func() bool {
				for _, m := range cloud.Posted(sid) {
					if m.User != nil && strings.Contains(string(m.Raw), a["text"]) {
						return true
					}
				}
				return false
			}) {
				return nil, errors.New("the fake cloud got no user message " + a["text"])
			}
			return nil, nil
		},
		"hold": func(map[string]string) (any, error) {
			peer := newFake(t, g, fmt.Sprintf("work-%02d", len(peers)+1), message.ModePrompting)
			id, err := peer.Send(ctxT(t), gwAddr, "hold me, please", message.ModeBypass)
			peers[id] = peer
			return map[string]string{"id": id}, err
		},
		"check-held": func(a map[string]string) (any, error) {
			_, err := peers[a["id"]].WaitControl(ctxT(t), func(f claude.Frame) bool { return f.OrigMsgID == a["id"] && f.Status == claude.WireDelivered })
			return nil, err
		},
		"cut":  func(map[string]string) (any, error) { proxy.setCut(true); return nil, nil },
		"heal": func(map[string]string) (any, error) { proxy.setCut(false); return nil, nil },
		"turn": func(a map[string]string) (any, error) {
			_, err := cloud.StreamTurn(sid, fakecloud.Turn{Text: a["text"], Chunks: 1})
			return nil, err
		},
	}
	runBrowserScript(t, "console_browser.js", 4*time.Minute, playwright, chromium, shots, steps)
	if _, err := os.Stat(filepath.Join(shots, "360x740-read-only.png")); err != nil {
		t.Error("no screenshot of the read-only view")
	}
	expectScreenshots(t, shots, "signed-in", "question", "tool", "plan", "sent", "held", "resumed")
}

// pairLink runs gateway pair and returns the link it printed.
func pairLink(t *testing.T, stateDir, base, scope string) string {
	t.Helper()
	args := []string{"pair", "--scope", scope, "--ttl", "2m"}
	if base != "" {
		args = append(args, "--url", base)
	}
	out, errOut, code := runCLI(t, stateDir, args...)
	link := regexp.MustCompile(`http://\S+/#pair=[0-9a-f]{64}`).FindString(out)
	if code != exitOK || link == "" {
		t.Fatalf("pair: exit %d, %s%s", code, out, errOut)
	}
	return link
}

// checkAnswer waits for the one control_response of request rid and checks
// its decision.
func checkAnswer(cloud *fakecloud.Server, sid, rid string, check func(map[string]any) error) error {
	var got []fakecloud.Answer
	if !testutil.Within(10*time.Second, func() bool {
		got = nil
		for _, a := range cloud.Answers(sid) {
			if a.RequestID == rid {
				got = append(got, a)
			}
		}
		return len(got) > 0
	}) {
		return errors.New("the fake cloud got no control_response")
	}
	if len(got) != 1 {
		return fmt.Errorf("the fake cloud got %d control_responses, want 1", len(got))
	}
	var env struct {
		Type     string `json:"type"`
		Response struct {
			Subtype   string         `json:"subtype"`
			RequestID string         `json:"request_id"`
			Response  map[string]any `json:"response"`
		} `json:"response"`
	}
	if err := json.Unmarshal(got[0].Raw, &env); err != nil || env.Type != "control_response" || env.Response.Subtype != "success" || env.Response.RequestID != rid {
		return fmt.Errorf("control_response %s", got[0].Raw)
	}
	return check(env.Response.Response)
}

func httptestServer(t *testing.T, h http.HandlerFunc) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// browserSteps are what a browser script asks the test to do, by name.
type browserSteps map[string]func(args map[string]string) (any, error)

// runBrowserScript runs testdata/script in node against the console,
// serving its steps on a loopback director, and fails the test when the
// script fails.
func runBrowserScript(t *testing.T, script string, within time.Duration, playwright, chromium, shots string, steps browserSteps) {
	t.Helper()
	director := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Step string            `json:"step"`
			Args map[string]string `json:"args"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || steps[req.Step] == nil {
			http.Error(w, "bad step", http.StatusBadRequest)
			return
		}
		out, err := steps[req.Step](req.Args)
		if err != nil {
			t.Errorf("step %s: %v", req.Step, err)
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", script))
	cmd.Env = append(os.Environ(), "PLAYWRIGHT_CORE="+playwright, "CHROMIUM="+chromium,
		"DIRECTOR="+director, "SCREENSHOTS="+shots)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("browser script:\n%s", out.String())
	if err != nil {
		t.Fatalf("the browser script failed: %v", err)
	}
}

// expectScreenshots checks the script left a screenshot of each view at
// both sizes.
func expectScreenshots(t *testing.T, shots string, views ...string) {
	t.Helper()
	for _, size := range []string{"360x740", "1280x800"} {
		for _, view := range views {
			if _, err := os.Stat(filepath.Join(shots, size+"-"+view+".png")); err != nil {
				t.Errorf("no screenshot of %s at %s", view, size)
			}
		}
	}
}
