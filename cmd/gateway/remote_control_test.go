package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
)

// live waits until the gateway has the session's live stream open.
func (g *remoteGateway) live(t *testing.T) {
	t.Helper()
	testutil.Eventually(t, "the session is live", func() bool { return g.cloud.Subscribers(g.sid)+g.cloud.Streams(g.sid) > 0 })
}

func TestAnUnservedControlRequestIsAnsweredWithAnErrorWithinASecond(t *testing.T) {
	for _, tr := range transports {
		t.Run("over "+tr, func(t *testing.T) {
			g := startRemoteGateway(t, tr, nil)
			g.live(t)
			sent := time.Now()
			if err := g.cloud.Emit(g.sid, `{"type":"control_request","request_id":"hook-e2e","request":{"subtype":"hook_callback","callback_id":"hook_0","input":{"hook_event_name":"PreToolUse"}}}`); err != nil {
				t.Fatal(err)
			}
			var as []fakecloud.Answer
			for len(as) == 0 && time.Since(sent) < time.Second {
				time.Sleep(5 * time.Millisecond)
				as = g.answers("hook-e2e")
			}
			if len(as) != 1 {
				t.Fatalf("%d answers within a second, want one", len(as))
			}
			var got struct {
				Type     string          `json:"type"`
				UUID     string          `json:"uuid"`
				Response json.RawMessage `json:"response"`
			}
			if err := json.Unmarshal(as[0].Raw, &got); err != nil {
				t.Fatal(err)
			}
			if _, err := uuid.Parse(got.UUID); err != nil || got.Type != "control_response" ||
				string(got.Response) != `{"error":"the gateway does not serve hook_callback control requests","request_id":"hook-e2e","subtype":"error"}` {
				t.Fatalf("answered with %s", as[0].Raw)
			}
			// Counted, and shown to watchers.
			testutil.Eventually(t, "the drop is counted", func() bool {
				_, b, err := g.Client.Probe(context.Background(), "/metrics")
				return err == nil && strings.Contains(string(b), `reason="unserved"} 1`)
			})
			(&promptGateway{stateDir: g.StateDir}).watchUntil(t, "hook_callback request hook-e2e is not served by the gateway: answered with an error", g.sid, "--since", "0")
		})
	}
}

func TestControlsReportTheSessionsAnswer(t *testing.T) {
	for _, tr := range transports {
		t.Run("over "+tr, func(t *testing.T) {
			g := startRemoteGateway(t, tr, nil)
			g.live(t)
			out, errOut, code := runCLI(t, g.StateDir, "remote", "interrupt", g.sid)
			if code != 0 || !strings.Contains(out, "accepted interrupt") {
				t.Fatalf("interrupt: exit %d: %s%s", code, out, errOut)
			}
			out, errOut, code = runCLI(t, g.StateDir, "remote", "mode", g.sid, "plan", "--json")
			var reply struct {
				Acknowledged bool   `json:"acknowledged"`
				RequestID    string `json:"request_id"`
				Mode         string `json:"mode"`
			}
			if code != 0 || json.Unmarshal([]byte(out), &reply) != nil || !reply.Acknowledged || reply.Mode != "plan" || reply.RequestID == "" {
				t.Fatalf("mode --json: exit %d: %s%s", code, out, errOut)
			}
			if err := g.cloud.RefuseControls(g.sid, "set_model", "model claude-opus-4-6 is not available"); err != nil {
				t.Fatal(err)
			}
			_, errOut, code = runCLI(t, g.StateDir, "remote", "model", g.sid, "claude-opus-4-6")
			if code != exitError || !strings.Contains(errOut, "the session refused set_model: model claude-opus-4-6 is not available") {
				t.Fatalf("a refused model change: exit %d: %s", code, errOut)
			}
			out, _, code = runCLI(t, g.StateDir, "remote", "model", g.sid, "claude-opus-4-6", "--json")
			if code != exitError || !strings.Contains(out, `"code": "conflict"`) {
				t.Fatalf("a refused model change, as JSON: exit %d: %s", code, out)
			}
			var ae *api.APIError
			if _, err := g.Client.Control(ctxT(t), "bridge:"+g.sid, message.Control{Kind: message.ControlSetModel, Model: "claude-opus-4-6"}); !errors.As(err, &ae) ||
				ae.Status != http.StatusConflict || !strings.Contains(ae.Error(), "is not available") {
				t.Fatalf("the API gave %v, want a 409 carrying the session's error", err)
			}
			before := len(g.cloud.Controls(g.sid))
			_, errOut, code = runCLI(t, g.StateDir, "remote", "mode", g.sid, "yolo")
			if code != exitError || !strings.Contains(errOut, "bypassPermissions") {
				t.Fatalf("mode yolo: exit %d: %s", code, errOut)
			}
			if n := len(g.cloud.Controls(g.sid)); n != before {
				t.Fatalf("mode yolo sent %d control requests", n-before)
			}
		})
	}
}

func TestRemoteInfoShowsWhatInitializeReturned(t *testing.T) {
	cloud := fakecloud.Start(t, fakecloud.Options{Token: e2eToken, OrgUUID: e2eOrg, Echo: true,
		Models:   []fakecloud.Model{{Value: "claude-opus-4-6", DisplayName: "Opus", Description: "most capable"}, {Value: "claude-haiku-4-5", DisplayName: "Haiku"}},
		Commands: []fakecloud.Command{{Name: "review", Description: "Review a pull request", ArgumentHint: "[pr]"}}})
	sid := cloud.CreateSession("fix the flaky test")
	g := followCloud(t, cloud, sid, "ws", nil)
	var info message.SessionInfo
	testutil.Eventually(t, "initialize is answered", func() bool {
		out, _, code := runCLI(t, g.StateDir, "remote", "info", sid, "--json")
		return code == 0 && json.Unmarshal([]byte(out), &info) == nil && info.Initialized
	})
	if len(info.Models) != 2 || info.Models[0] != (message.ModelInfo{Value: "claude-opus-4-6", DisplayName: "Opus", Description: "most capable"}) ||
		len(info.Commands) != 1 || info.Commands[0].ArgumentHint != "[pr]" || !info.Followed {
		t.Fatalf("info = %+v", info)
	}
	out, _, code := runCLI(t, g.StateDir, "remote", "info", "bridge:"+sid)
	for _, want := range []string{"claude-opus-4-6 (Opus): most capable", "/review ([pr]): Review a pull request", "permission mode:  -"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("info lacks %q (exit %d):\n%s", want, code, out)
		}
	}

	t.Run("a model the session does not offer is refused before anything is sent", func(t *testing.T) {
		before := len(cloud.Controls(sid))
		_, errOut, code := runCLI(t, g.StateDir, "remote", "model", sid, "gpt-5")
		if code != exitError || !strings.Contains(errOut, "claude-haiku-4-5") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if n := len(cloud.Controls(sid)); n != before {
			t.Fatalf("%d control requests sent", n-before)
		}
	})
	t.Run("an accepted mode and model show in info", func(t *testing.T) {
		for _, args := range [][]string{{"mode", sid, "acceptEdits"}, {"model", sid, "Haiku"}} {
			if _, errOut, code := runCLI(t, g.StateDir, append([]string{"remote"}, args...)...); code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, errOut)
			}
		}
		out, _, _ := runCLI(t, g.StateDir, "remote", "info", sid, "--json")
		if json.Unmarshal([]byte(out), &info) != nil || info.PermissionMode != "acceptEdits" || info.Model != "Haiku" {
			t.Fatalf("info = %s", out)
		}
	})
}

func TestRemoteCommandsOnAnUnknownSessionFailAtOnce(t *testing.T) {
	g := startRemoteGateway(t, "ws", nil)
	g.live(t)
	for _, args := range [][]string{
		{"watch", "bridge:session_01nobodyhasthis"},
		{"watch", "session_01nobodyhasthis"},
		{"info", "bridge:session_01nobodyhasthis"},
		{"interrupt", "bridge:session_01nobodyhasthis"},
		{"model", "bridge:session_01nobodyhasthis", "claude-opus-4-6"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var out, errb syncBuffer
			code := run(ctx, &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }},
				append(append([]string{"remote"}, args...), "--state-dir", g.StateDir))
			if ctx.Err() != nil {
				t.Fatalf("still running after 10 s; printed %q", out.String())
			}
			if code != exitError || !strings.Contains(errb.String(), "session_01nobodyhasthis") {
				t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
			}
		})
	}
	if n := len(g.cloud.Controls("session_01nobodyhasthis")); n != 0 {
		t.Errorf("%d controls sent to an unknown session", n)
	}
}

func TestARemoteAnswerNeedsNoEcho(t *testing.T) {
	g := startAliasGateway(t, "result")
	fk := newFake(t, g.Gateway, "work-08", message.ModePrompting)
	alias := claudeAlias(t, g.Gateway, "fix-the-flaky-test")
	if err := g.cloud.SuppressEcho(g.sid, true); err != nil {
		t.Fatal(err)
	}
	answered := func(text string) func(fakeclaude.Received) bool {
		return func(r fakeclaude.Received) bool {
			return strings.Contains(r.Content.Envelope.Body, "echo: ") && strings.Contains(r.Content.Envelope.Body, text)
		}
	}
	if _, err := fk.Send(ctxT(t), alias, "first, never echoed", message.ModePrompting); err != nil {
		t.Fatal(err)
	}
	if _, err := fk.WaitReceived(ctxT(t), answered("first, never echoed")); err != nil {
		t.Fatalf("no answer without the echo: %v", err)
	}
	// The late echo changes nothing: the next message gets its own answer,
	// and the first exactly one.
	if err := g.cloud.SuppressEcho(g.sid, false); err != nil {
		t.Fatal(err)
	}
	if _, err := fk.Send(ctxT(t), alias, "second, echoed", message.ModePrompting); err != nil {
		t.Fatal(err)
	}
	if _, err := fk.WaitReceived(ctxT(t), answered("second, echoed")); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range fk.Received() {
		if answered("first, never echoed")(r) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the first message was answered %d times, want once", n)
	}
}

func TestAControlToADormantSessionWakesItToHearTheAnswer(t *testing.T) {
	g := startRemoteGatewayTuned(t, "ws", func(c *stream.Config) {
		c.IdleTimeout, c.DormantPoll = 300*time.Millisecond, time.Hour
	})
	g.live(t)
	testutil.Eventually(t, "the idle session goes dormant", func() bool { return g.cloud.Subscribers(g.sid) == 0 })
	out, errOut, code := runCLI(t, g.StateDir, "remote", "interrupt", g.sid)
	if code != 0 || !strings.Contains(out, "accepted interrupt") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
}
