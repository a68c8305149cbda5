package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// followOne starts a gateway with only the remote leg following session
// sid of cloud alone (not all): what it creates, it must follow itself.
func followOne(t *testing.T, cloud *fakecloud.Server, sid, transport string) *remoteGateway {
	t.Helper()
	root := t.TempDir()
	tokenFile := filepath.Join(root, "token")
	if err := os.WriteFile(tokenFile, []byte(e2eToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ro := &remoteOpts{url: cloud.URL(), org: e2eOrg, tokenFile: tokenFile, follow: multi{sid}, transport: transport}
	if err := ro.check(); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, root, func(c *serveConfig) { c.noClaude, c.noQwen, c.bridge, c.remote = true, true, false, ro })
	t.Cleanup(func() { g.Stop(t) })
	return &remoteGateway{Gateway: g, cloud: cloud, sid: sid}
}

func TestRemoteSessionLifecycleRoundTrips(t *testing.T) {
	for _, tr := range transports {
		t.Run("over "+tr, func(t *testing.T) {
			cloud := fakecloud.Start(t, fakecloud.Options{Token: e2eToken, OrgUUID: e2eOrg, Echo: true})
			g := followOne(t, cloud, cloud.CreateSession("already there"), tr)

			t.Run("environments lists the cloud's, in the shape claude.ai gives them", func(t *testing.T) {
				out, errOut, code := runCLI(t, g.StateDir, "remote", "environments", "--json")
				var envs []message.Environment
				if code != 0 || json.Unmarshal([]byte(out), &envs) != nil {
					t.Fatalf("exit %d: %s%s", code, out, errOut)
				}
				want := message.Environment{ID: "env_fake_bridge", Name: "fake:/work:0001", Kind: "bridge", State: "active",
					Online: true, Machine: "fake", Directory: "/work", Branch: "HEAD", MaxSessions: 1}
				if len(envs) != 1 || envs[0] != want {
					t.Fatalf("environments = %+v, want [%+v]", envs, want)
				}
				out, _, _ = runCLI(t, g.StateDir, "remote", "environments")
				if !strings.Contains(out, "env_fake_bridge") || !strings.Contains(out, "/work") {
					t.Fatalf("table:\n%s", out)
				}
			})

			var sid string
			t.Run("create sends the documented body and prints the new id", func(t *testing.T) {
				out, errOut, code := runCLI(t, g.StateDir, "remote", "create", "--env", "env_fake_bridge", "--title", "Lifecycle",
					"--model", "claude-sonnet-4-6", "--repo", "acme/widgets", "--branch", "main", "say hello")
				sid = strings.TrimSpace(out)
				s, ok := cloud.Session(sid)
				if code != 0 || !ok {
					t.Fatalf("exit %d, printed %q: %s", code, out, errOut)
				}
				if s.Title != "Lifecycle" || s.EnvironmentID != "env_fake_bridge" ||
					string(s.SessionContext) != `{"model":"claude-sonnet-4-6","sources":[{"type":"git_repository","git_info":{"type":"github","repo":"acme/widgets","branches":["main"]}}]}` {
					t.Fatalf("the cloud has %+v (context %s)", s, s.SessionContext)
				}
				posted := cloud.Posted(sid)
				if len(posted) != 1 || posted[0].Type != "user" || posted[0].User.Content.Text() != "say hello" {
					t.Fatalf("first events %+v, want the prompt", posted)
				}
			})
			t.Run("the new session is listed and followed at once, its first turn watched", func(t *testing.T) {
				out, _, _ := runCLI(t, g.StateDir, "remote", "sessions", "--json")
				if !strings.Contains(out, `"bridge:`+sid+`"`) || !strings.Contains(out, `"lifecycle"`) {
					t.Fatalf("sessions:\n%s", out)
				}
				testutil.Eventually(t, "the new session is live", func() bool { return cloud.Subscribers(sid)+cloud.Streams(sid) > 0 })
				(&promptGateway{stateDir: g.StateDir}).watchUntil(t, "result:", sid, "--since", "0")
			})
			t.Run("title renames it, on the cloud and in the listing", func(t *testing.T) {
				out, errOut, code := runCLI(t, g.StateDir, "remote", "title", "lifecycle", "Renamed work")
				if s, _ := cloud.Session(sid); code != 0 || s.Title != "Renamed work" || !strings.Contains(out, `"Renamed work"`) {
					t.Fatalf("exit %d: %s%s; cloud title %q", code, out, errOut, s.Title)
				}
				if _, err := g.Client.Resolve(ctxT(t), "renamed-work"); err != nil {
					t.Fatalf("the new name does not resolve: %v", err)
				}
			})
			t.Run("archive archives it and the gateway stops following it", func(t *testing.T) {
				out, errOut, code := runCLI(t, g.StateDir, "remote", "archive", "bridge:"+sid, "--json")
				var s message.Session
				if code != 0 || json.Unmarshal([]byte(out), &s) != nil || s.Status != "archived" || s.Reachable {
					t.Fatalf("exit %d: %s%s", code, out, errOut)
				}
				if cs, _ := cloud.Session(sid); cs.Status != "archived" {
					t.Fatalf("cloud status %q", cs.Status)
				}
				testutil.Eventually(t, "the stream is closed", func() bool { return cloud.Subscribers(sid)+cloud.Streams(sid) == 0 })
			})
			t.Run("create refuses a branch without a repository and creates nothing", func(t *testing.T) {
				before, _, _ := runCLI(t, g.StateDir, "remote", "sessions", "--json")
				_, errOut, code := runCLI(t, g.StateDir, "remote", "create", "--branch", "main", "hi")
				after, _, _ := runCLI(t, g.StateDir, "remote", "sessions", "--json")
				if code != exitError || !strings.Contains(errOut, "--repo") || before != after {
					t.Fatalf("exit %d: %s", code, errOut)
				}
			})
		})
	}
}

func TestRemoteCreateFollowWatchesTheNewSession(t *testing.T) {
	cloud := fakecloud.Start(t, fakecloud.Options{Token: e2eToken, OrgUUID: e2eOrg, Echo: true})
	g := followOne(t, cloud, cloud.CreateSession("already there"), "ws")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }},
			[]string{"remote", "create", "--follow", "--state-dir", g.StateDir, "follow me"})
	}()
	testutil.Eventually(t, "the first turn's result is printed", func() bool { return strings.Contains(out.String(), "result:") })
	cancel()
	<-done
	lines := strings.SplitN(out.String(), "\n", 2)
	if _, ok := cloud.Session(lines[0]); !ok || !strings.Contains(lines[1], "user: follow me") {
		t.Fatalf("printed:\n%s%s", out.String(), errb.String())
	}
}

func TestLifecycleWithoutARemoteLegSaysWhatIsMissing(t *testing.T) {
	g := startGateway(t, t.TempDir(), func(c *serveConfig) { c.noClaude, c.noQwen = true, true })
	t.Cleanup(func() { g.Stop(t) })
	for _, args := range [][]string{{"environments"}, {"create", "hi"}, {"archive", "bridge:session_01x"}} {
		_, errOut, code := runCLI(t, g.StateDir, append([]string{"remote"}, args...)...)
		if code != exitError || !strings.Contains(errOut, "remote credentials") {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
	}
}

func TestAFileSentToABridgeTargetReachesFileAttachmentsIntact(t *testing.T) {
	for _, tr := range transports {
		t.Run("over "+tr, func(t *testing.T) {
			g := startRemoteGateway(t, tr, nil)
			data := []byte("line one\n\x00\xff\xfe binary tail \u00e9")
			path := filepath.Join(g.StateDir, "files", "notes.txt")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := runCLI(t, g.StateDir, "send", "bridge:"+g.sid, "see the notes", "--file", path, "--wait", "--timeout", "10s")
			if code != exitOK {
				t.Fatalf("send: exit %d: %s%s", code, out, errOut)
			}
			var ev struct {
				Files []struct {
					Name    string `json:"file_name"`
					Type    string `json:"file_type"`
					Content string `json:"file_content"`
				} `json:"file_attachments"`
			}
			var got []fakecloud.Message
			for _, m := range g.cloud.Posted(g.sid) {
				if m.Type == "user" && m.User.Content.Text() == "see the notes" {
					got = append(got, m)
				}
			}
			if len(got) != 1 || json.Unmarshal(got[0].Raw, &ev) != nil || len(ev.Files) != 1 {
				t.Fatalf("posted %+v", got)
			}
			f := ev.Files[0]
			if f.Name != "notes.txt" || f.Type != "text/plain; charset=utf-8" || f.Content != base64.StdEncoding.EncodeToString(data) ||
				string(got[0].User.Files[0].Content) != string(data) {
				t.Fatalf("file_attachments[0] = %+v", f)
			}
		})
	}
}
