package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

const (
	e2eToken = "tok-e2e-0123456789"
	e2eOrg   = "7b0c2f4e-1d2a-4c3b-9e8f-0a1b2c3d4e5f"
)

// remoteGateway is a gateway with only the remote leg, following every
// session of a fake claude.ai.
type remoteGateway struct {
	*gatewaytest.Gateway
	cloud *fakecloud.Server
	sid   string
}

func startRemoteGateway(t *testing.T, transport string, before func(c *fakecloud.Server, sid string)) *remoteGateway {
	t.Helper()
	return startRemoteGatewayWith(t, transport, before, func(c *stream.Config) {
		c.Backoff = clock.Backoff{Initial: 20 * time.Millisecond, Max: 20 * time.Millisecond}
		c.MaxRetries = -1
	})
}

func startRemoteGatewayTuned(t *testing.T, transport string, tune func(*stream.Config)) *remoteGateway {
	t.Helper()
	return startRemoteGatewayWith(t, transport, nil, tune)
}

func startRemoteGatewayWith(t *testing.T, transport string, before func(c *fakecloud.Server, sid string), tune func(*stream.Config)) *remoteGateway {
	t.Helper()
	cloud := fakecloud.Start(t, fakecloud.Options{Token: e2eToken, OrgUUID: e2eOrg, Echo: true})
	sid := cloud.CreateSession("fix the flaky test")
	if before != nil {
		before(cloud, sid)
	}
	return followCloud(t, cloud, sid, transport, tune)
}

// followCloud starts a gateway with only the remote leg, following every
// session of cloud.
func followCloud(t *testing.T, cloud *fakecloud.Server, sid, transport string, tune func(*stream.Config)) *remoteGateway {
	t.Helper()
	root := t.TempDir()
	tokenFile := filepath.Join(root, "token")
	if err := os.WriteFile(tokenFile, []byte(e2eToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ro := &remoteOpts{url: cloud.URL(), org: e2eOrg, tokenFile: tokenFile, follow: multi{"all"}, transport: transport}
	if err := ro.check(); err != nil {
		t.Fatal(err)
	}
	ro.tune = tune
	g := startGateway(t, root, func(c *serveConfig) {
		c.noClaude, c.noQwen, c.bridge, c.remote = true, true, false, ro
	})
	t.Cleanup(func() { g.Stop(t) })
	return &remoteGateway{Gateway: g, cloud: cloud, sid: sid}
}

// pendingIDs lists the ids `gateway permissions --json` prints.
func (g *remoteGateway) pending(t *testing.T) []message.PermissionRequest {
	t.Helper()
	out, errOut, code := runCLI(t, g.StateDir, "permissions", "--json")
	if code != 0 {
		t.Fatalf("permissions: exit %d: %s", code, errOut)
	}
	var ps []message.PermissionRequest
	if err := json.Unmarshal([]byte(out), &ps); err != nil {
		t.Fatalf("permissions --json printed %q: %v", out, err)
	}
	return ps
}

// waitPrompt waits until the prompt with this request id is pending and
// returns it.
func (g *remoteGateway) waitPrompt(t *testing.T, requestID string) message.PermissionRequest {
	t.Helper()
	var got message.PermissionRequest
	testutil.Eventually(t, "prompt "+requestID+" is listed", func() bool {
		for _, p := range g.pending(t) {
			if p.RequestID == requestID {
				got = p
				return true
			}
		}
		return false
	})
	return got
}

func (g *remoteGateway) answers(requestID string) []fakecloud.Answer {
	var out []fakecloud.Answer
	for _, a := range g.cloud.Answers(g.sid) {
		if a.RequestID == requestID {
			out = append(out, a)
		}
	}
	return out
}

var transports = []string{"ws", "sse"}

func TestRemoteSessionsAreListedAndReachable(t *testing.T) {
	for _, tr := range transports {
		t.Run("over "+tr+", a remote session is listed with protocol remote and answers a send", func(t *testing.T) {
			g := startRemoteGateway(t, tr, nil)
			out, errOut, code := runCLI(t, g.StateDir, "sessions", "--json")
			if code != 0 {
				t.Fatalf("sessions: %d %s", code, errOut)
			}
			var ss []message.Session
			if err := json.Unmarshal([]byte(out), &ss); err != nil {
				t.Fatal(err)
			}
			if len(ss) != 1 || ss[0].Protocol != message.ProtocolRemote || ss[0].Address != "bridge:"+g.sid || ss[0].Name != "fix-the-flaky-test" || ss[0].Title != "fix the flaky test" {
				t.Fatalf("sessions = %+v, want the one remote session", ss)
			}
			out, _, _ = runCLI(t, g.StateDir, "remote", "sessions", "--json")
			if !strings.Contains(out, "bridge:"+g.sid) {
				t.Errorf("remote sessions printed %q", out)
			}

			// Wait for the stream, so the echo of our post is seen live.
			testutil.Eventually(t, "the session is live", func() bool { return g.cloud.Subscribers(g.sid)+g.cloud.Streams(g.sid) > 0 })
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			results := make(chan string, 4)
			go g.Watch(ctx, 0, func(ev message.Event) error {
				if ev.Type == message.EventRemote && ev.Remote.Kind == "result" {
					results <- ev.Remote.Text
				}
				return nil
			})
			out, errOut, code = runCLI(t, g.StateDir, "send", "bridge:"+g.sid, "hello there", "--wait", "--timeout", "10s")
			if code != 0 {
				t.Fatalf("send --wait: exit %d, %s %s", code, out, errOut)
			}
			select {
			case r := <-results:
				if r != "echo: hello there" {
					t.Errorf("result = %q", r)
				}
			case <-ctx.Done():
				t.Fatal("no result event from the remote session")
			}
			var users int
			for _, m := range g.cloud.Posted(g.sid) {
				if m.Type == "user" && m.User.Content.Text() == "hello there" {
					users++
				}
			}
			if users != 1 {
				t.Errorf("the fake got %d user events with the text, want 1", users)
			}
		})
	}
}

func TestRemotePermissionPrompts(t *testing.T) {
	for _, tr := range transports {
		t.Run("over "+tr, func(t *testing.T) {
			g := startRemoteGateway(t, tr, nil)
			testutil.Eventually(t, "the session is live", func() bool { return g.cloud.Subscribers(g.sid)+g.cloud.Streams(g.sid) > 0 })

			t.Run("a Bash prompt is listed with id, session_id, tool_name and input, and allow answers it", func(t *testing.T) {
				rid, err := g.cloud.Prompt(g.sid, fakecloud.BashPrompt("go test ./..."))
				if err != nil {
					t.Fatal(err)
				}
				p := g.waitPrompt(t, rid)
				if p.ID == "" || p.SessionID != g.sid || p.ToolName != "Bash" || !strings.Contains(string(p.Input), "go test ./...") {
					t.Fatalf("prompt = %+v", p)
				}
				if _, errOut, code := runCLI(t, g.StateDir, "allow", p.ID, "--rule", "Bash(go test ./...)"); code != 0 {
					t.Fatalf("allow: exit %d: %s", code, errOut)
				}
				as := g.answers(rid)
				if len(as) != 1 || !as[0].Matched || as[0].Decision == nil || as[0].Decision.Behavior != "allow" ||
					as[0].Decision.ToolUseID == "" || len(as[0].Decision.UpdatedPermissions) != 1 {
					t.Fatalf("answers = %+v", as)
				}
				if _, _, code := runCLI(t, g.StateDir, "allow", p.ID); code == 0 {
					t.Error("a second allow of the same prompt succeeded")
				}
				if n := len(g.answers(rid)); n != 1 {
					t.Errorf("the fake got %d answers, want 1", n)
				}
			})

			t.Run("deny sends the message", func(t *testing.T) {
				rid, _ := g.cloud.Prompt(g.sid, fakecloud.BashPrompt("rm -rf /"))
				p := g.waitPrompt(t, rid)
				if _, errOut, code := runCLI(t, g.StateDir, "deny", p.ID, "--message", "too dangerous"); code != 0 {
					t.Fatalf("deny: exit %d: %s", code, errOut)
				}
				as := g.answers(rid)
				if len(as) != 1 || as[0].Decision.Behavior != "deny" || as[0].Decision.Message != "too dangerous" {
					t.Fatalf("answers = %+v", as)
				}
			})

			t.Run("answer sends a string for single-select and a list for multi-select", func(t *testing.T) {
				rid, _ := g.cloud.Prompt(g.sid, fakecloud.AskPrompt())
				p := g.waitPrompt(t, rid)
				if len(p.Questions) != 2 {
					t.Fatalf("questions = %+v", p.Questions)
				}
				_, errOut, code := runCLI(t, g.StateDir, "answer", p.ID, "Approach=Option B", "Features=Logging", "Features=Metrics")
				if code != 0 {
					t.Fatalf("answer: exit %d: %s", code, errOut)
				}
				as := g.answers(rid)
				if len(as) != 1 {
					t.Fatalf("answers = %+v", as)
				}
				var in struct {
					Answers   map[string]any `json:"answers"`
					Questions []any          `json:"questions"`
				}
				if err := json.Unmarshal(as[0].Decision.UpdatedInput, &in); err != nil {
					t.Fatal(err)
				}
				if in.Answers["Which approach?"] != "Option B" || len(in.Questions) != 2 {
					t.Errorf("updatedInput = %s", as[0].Decision.UpdatedInput)
				}
				if l, ok := in.Answers["Which features?"].([]any); !ok || len(l) != 2 {
					t.Errorf("multi-select answer = %#v, want a list of two", in.Answers["Which features?"])
				}
			})

			t.Run("plan approval goes through the same flow", func(t *testing.T) {
				rid, _ := g.cloud.Prompt(g.sid, fakecloud.PlanPrompt("1. fix\n2. test"))
				p := g.waitPrompt(t, rid)
				if p.ToolName != "ExitPlanMode" {
					t.Fatalf("prompt = %+v", p)
				}
				if _, errOut, code := runCLI(t, g.StateDir, "allow", p.ID); code != 0 {
					t.Fatalf("allow: %d %s", code, errOut)
				}
			})

			t.Run("control_cancel_request withdraws the prompt", func(t *testing.T) {
				rid, _ := g.cloud.Prompt(g.sid, fakecloud.BashPrompt("make"))
				p := g.waitPrompt(t, rid)
				if err := g.cloud.CancelPrompt(g.sid, rid); err != nil {
					t.Fatal(err)
				}
				testutil.Eventually(t, "the prompt leaves the list", func() bool {
					for _, q := range g.pending(t) {
						if q.ID == p.ID {
							return false
						}
					}
					return true
				})
				if _, _, code := runCLI(t, g.StateDir, "allow", p.ID); code == 0 {
					t.Error("allow of a withdrawn prompt succeeded")
				}
				if n := len(g.answers(rid)); n != 0 {
					t.Errorf("the fake got %d answers to a withdrawn prompt", n)
				}
			})

			t.Run("a prompt pending across a reconnect can still be answered", func(t *testing.T) {
				rid, _ := g.cloud.Prompt(g.sid, fakecloud.BashPrompt("go vet"))
				p := g.waitPrompt(t, rid)
				before := g.cloud.Requests()
				g.cloud.Disconnect(g.sid, 0)
				testutil.Eventually(t, "the stream reconnects", func() bool {
					return len(g.cloud.Requests()) > len(before) && g.cloud.Subscribers(g.sid)+g.cloud.Streams(g.sid) > 0
				})
				if _, errOut, code := runCLI(t, g.StateDir, "allow", p.ID); code != 0 {
					t.Fatalf("allow after reconnect: %d %s", code, errOut)
				}
				if as := g.answers(rid); len(as) != 1 || !as[0].Matched {
					t.Fatalf("answers = %+v", as)
				}
			})

			t.Run("interrupt, mode and model reach the session over HTTP", func(t *testing.T) {
				for _, args := range [][]string{
					{"remote", "interrupt", "bridge:" + g.sid},
					{"remote", "mode", g.sid, "plan"},
					{"remote", "model", g.sid, "claude-opus-4-6"},
				} {
					if _, errOut, code := runCLI(t, g.StateDir, args...); code != 0 {
						t.Fatalf("%v: exit %d: %s", args, code, errOut)
					}
				}
				var kinds []string
				for _, c := range g.cloud.Controls(g.sid) {
					kinds = append(kinds, c.Subtype)
				}
				got := strings.Join(kinds, ",")
				for _, want := range []string{"interrupt", "set_permission_mode", "set_model"} {
					if !strings.Contains(got, want) {
						t.Errorf("controls = %s, want %s among them", got, want)
					}
				}
			})
		})
	}
}

func TestAPromptRaisedBeforeTheGatewayStartedIsListed(t *testing.T) {
	for _, tr := range transports {
		t.Run("over "+tr, func(t *testing.T) {
			var rid, answered string
			g := startRemoteGateway(t, tr, func(c *fakecloud.Server, sid string) {
				if _, err := c.StreamTurn(sid, fakecloud.Turn{Text: "some history", Chunks: 3}); err != nil {
					t.Fatal(err)
				}
				answered, _ = c.Prompt(sid, fakecloud.BashPrompt("old"))
				c.CancelPrompt(sid, answered)
				rid, _ = c.Prompt(sid, fakecloud.BashPrompt("ls"))
			})
			p := g.waitPrompt(t, rid)
			for _, q := range g.pending(t) {
				if q.RequestID == answered {
					t.Errorf("a withdrawn prompt from the history is listed: %+v", q)
				}
			}
			if _, errOut, code := runCLI(t, g.StateDir, "allow", p.ID); code != 0 {
				t.Fatalf("allow: %d %s", code, errOut)
			}
		})
	}
}

func TestARefusedCredentialShowsInReadiness(t *testing.T) {
	for _, tr := range transports {
		t.Run("over "+tr+", a wrong token makes the remote leg not ready and its stream give up", func(t *testing.T) {
			cloud := fakecloud.Start(t, fakecloud.Options{Token: e2eToken, OrgUUID: e2eOrg})
			sid := cloud.CreateSession("s")
			root := t.TempDir()
			tokenFile := filepath.Join(root, "token")
			if err := os.WriteFile(tokenFile, []byte("not-the-token"), 0o600); err != nil {
				t.Fatal(err)
			}
			ro := &remoteOpts{url: cloud.URL(), org: e2eOrg, tokenFile: tokenFile, follow: multi{sid}, transport: tr}
			if err := ro.check(); err != nil {
				t.Fatal(err)
			}
			ro.tune = func(c *stream.Config) {
				c.Backoff = clock.Backoff{Initial: 10 * time.Millisecond, Max: 10 * time.Millisecond}
			}
			ro.listInterval = 100 * time.Millisecond
			g := startGateway(t, root, func(c *serveConfig) { c.noClaude, c.noQwen, c.bridge, c.remote = true, true, false, ro })
			t.Cleanup(func() { g.Stop(t) })
			var rd api.Readiness
			testutil.Eventually(t, "readyz reports the remote leg", func() bool {
				var err error
				rd, err = g.Ready(context.Background())
				return err == nil && !rd.Ready && rd.Legs["remote"] != "" && rd.Legs["remote"] != "ready"
			})
			if !strings.Contains(rd.Legs["remote"], "401") && !strings.Contains(strings.ToLower(rd.Legs["remote"]), "unauthorized") {
				t.Errorf("readyz remote = %q, want the refusal", rd.Legs["remote"])
			}
			if strings.Contains(rd.Legs["remote"], "not-the-token") {
				t.Errorf("readyz shows the token: %q", rd.Legs["remote"])
			}
			var gaveUp *message.Link
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = g.Watch(ctx, 0, func(ev message.Event) error {
				if ev.Link != nil && ev.Link.State == message.LinkGaveUp {
					gaveUp = ev.Link
					return io.EOF
				}
				return nil
			})
			if gaveUp == nil || gaveUp.SessionID != sid {
				t.Fatalf("no gave_up link event for %s", sid)
			}

			// Rotating the token file brings the leg back without a restart.
			if err := os.WriteFile(tokenFile+".new", []byte(e2eToken), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tokenFile+".new", tokenFile); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, "the remote leg is ready and the session live again", func() bool {
				rd, err := g.Ready(context.Background())
				return err == nil && rd.Ready && cloud.Subscribers(sid)+cloud.Streams(sid) > 0
			})
		})
	}
}

func TestOtherCredentials(t *testing.T) {
	t.Run("a web session key file reaches the sessions", func(t *testing.T) {
		cloud := fakecloud.Start(t, fakecloud.Options{SessionKey: "sk-ant-sid01-cookie", OrgUUID: e2eOrg})
		sid := cloud.CreateSession("by cookie")
		root := t.TempDir()
		keyFile := filepath.Join(root, "session-key")
		if err := os.WriteFile(keyFile, []byte("sk-ant-sid01-cookie\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		g := startBinary(t, root, "--legs", "none", "--bridge=false", "--remote-url", cloud.URL(), "--remote-org", e2eOrg,
			"--remote-session-key-file", keyFile, "--remote-follow", "all")
		t.Cleanup(func() { g.Stop(t) })
		testutil.Eventually(t, "the session is live", func() bool { return cloud.Subscribers(sid) > 0 })
		if _, errOut, code := runCLI(t, g.StateDir, "send", "bridge:"+sid, "over a cookie"); code != 0 {
			t.Fatalf("send: %d %s", code, errOut)
		}
		for _, r := range cloud.Requests() {
			if r.Method == "POST" && strings.Contains(r.Path, sid) && r.Header.Get("Cookie") == "" {
				t.Errorf("the post carried no cookie: %+v", r.Header)
			}
		}
	})

	t.Run("a reused Claude Code login with an expired token is refreshed through the token URL", func(t *testing.T) {
		cloud := fakecloud.Start(t, fakecloud.Options{Token: "expired-access", TokenExpires: true, OrgUUID: e2eOrg,
			RefreshToken: "refresh-1", ClientID: auth.ClaudeCodeClientID})
		cloud.ExpireTokens()
		sid := cloud.CreateSession("by login")
		root := t.TempDir()
		creds := filepath.Join(root, ".credentials.json")
		body := fmt.Sprintf(`{"claudeAiOauth":{"accessToken":"expired-access","refreshToken":"refresh-1","expiresAt":%d,"scopes":["user:inference"]}}`,
			time.Now().Add(-time.Hour).UnixMilli())
		if err := os.WriteFile(creds, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		g := startBinary(t, root, "--legs", "none", "--bridge=false", "--remote-url", cloud.URL(), "--remote-org", e2eOrg,
			"--remote-claude-credentials", creds, "--remote-token-url", cloud.URL()+"/v1/oauth/token", "--remote-follow", sid, "--remote-transport", "sse")
		t.Cleanup(func() { g.Stop(t) })
		testutil.Eventually(t, "the session is live", func() bool { return cloud.Streams(sid) > 0 })
		if cloud.Refreshes() == 0 {
			t.Error("the token was never refreshed")
		}
		after, err := os.ReadFile(creds)
		if err != nil || string(after) != body {
			t.Errorf("the credentials file changed: %s", after)
		}
	})
}
