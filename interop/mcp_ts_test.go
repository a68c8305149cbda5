package interop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// MCPSDKVersion is the @modelcontextprotocol/sdk .ci/install-interop.sh
// installs.
const MCPSDKVersion = "1.32.2"

// needMCPSDK returns the node_modules holding the TypeScript MCP SDK,
// failing when it is missing or of another version.
func needMCPSDK(t *testing.T) string {
	t.Helper()
	needInterop(t)
	cache := os.Getenv("GATEWAY_INTEROP_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "gateway-interop")
	}
	dir := filepath.Join(cache, "mcp-sdk", "node_modules")
	raw, err := os.ReadFile(filepath.Join(dir, "@modelcontextprotocol", "sdk", "package.json"))
	if err != nil {
		t.Fatalf("the TypeScript MCP SDK is not installed (run .ci/install-interop.sh): %v", err)
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(raw, &pkg); err != nil || pkg.Version != MCPSDKVersion {
		t.Fatalf("@modelcontextprotocol/sdk is %q, want %s (run .ci/install-interop.sh)", pkg.Version, MCPSDKVersion)
	}
	return dir
}

type tsCall struct {
	IsError bool   `json:"isError"`
	Thrown  bool   `json:"thrown"`
	Code    int    `json:"code"`
	Text    string `json:"text"`
}

// The TypeScript SDK over Streamable HTTP with a token: refused without
// one, refused an answer without the approve scope, lists the tools,
// sends, gets MCP errors for bad arguments, and answers a prompt of the
// fake cloud, whose control_response is checked exactly.
func TestTheTypeScriptSDKUsesTheGatewayOverStreamableHTTP(t *testing.T) {
	modules := needMCPSDK(t)
	w := gatewaytest.NewWorld(t)
	cloud, sid, flags := startCloud(t, w)
	addr := testutil.FreePort(t)
	g := gatewaytest.Start(t, w, "gateway-it", append(flags, "--api", addr)...)
	full, err := os.ReadFile(filepath.Join(w.StateDir, "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	limited, code, err := g.Run(t, "tokens", "add", "--label", "ts-limited", "--scope", "read,send")
	if err != nil || code != 0 {
		t.Fatalf("tokens add: exit %d, %v", code, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for cloud.Subscribers(sid) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	requestID := "req-mcp-" + uuid.NewString()[:8]
	sum := sha256.Sum256([]byte(sid + "\x00" + requestID))
	promptID := "p" + hex.EncodeToString(sum[:])[:6] // the broker's short id
	spec := fakecloud.BashPrompt("go test ./...")
	spec.RequestID = requestID
	if _, err := cloud.Prompt(sid, spec); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyWithin(t, 30*time.Second, "the prompt listed", func() bool {
		out, _, _ := g.Run(t, "permissions", "--json")
		return strings.Contains(out, promptID)
	})

	sendText := "from-ts-" + uuid.NewString()[:8]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "mcp_client.cjs"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "GATEWAY_MCP_URL=http://"+addr+"/mcp",
		"TOKEN_FULL="+strings.TrimSpace(string(full)), "TOKEN_LIMITED="+strings.TrimSpace(limited),
		"PROMPT_ID="+promptID, "SEND_TEXT="+sendText)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var out struct {
		Anonymous     string
		LimitedAnswer tsCall
		Tools         []struct {
			Name        string
			HasSchema   bool
			Description string
		}
		Sessions, Send, MissingArgs, WrongType, UnknownTool, Answer tsCall
	}
	t.Logf("the client saw: %s", raw)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("node printed %s: %v", raw, err)
	}

	if !strings.HasPrefix(out.Anonymous, "refused") {
		t.Errorf("without a token: %s", out.Anonymous)
	}
	if !out.LimitedAnswer.IsError || !strings.Contains(out.LimitedAnswer.Text, `lacks the "approve" scope`) {
		t.Errorf("an answer without the approve scope: %+v", out.LimitedAnswer)
	}
	want := []string{"list_sessions", "send_message", "wait_for_messages", "get_message_status", "list_permission_requests", "answer_permission_request", "remote_session_output"}
	var names []string
	for _, tl := range out.Tools {
		names = append(names, tl.Name)
		if !tl.HasSchema || tl.Description == "" {
			t.Errorf("tool %s has no input schema or description", tl.Name)
		}
	}
	for _, n := range want {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+n+" ") {
			t.Errorf("tools %v lack %s", names, n)
		}
	}
	if out.Sessions.IsError || !strings.Contains(out.Sessions.Text, `"name": "build-bot"`) || !strings.Contains(out.Sessions.Text, `"name": "ts-full"`) {
		t.Errorf("list_sessions: %+v", out.Sessions)
	}
	if out.Send.IsError || out.Send.Thrown || !strings.Contains(out.Send.Text, `"id"`) {
		t.Errorf("send_message: %+v", out.Send)
	}
	for name, c := range map[string]tsCall{"missing arguments": out.MissingArgs, "a wrong type": out.WrongType, "an unknown tool": out.UnknownTool} {
		if !c.IsError && !c.Thrown {
			t.Errorf("%s: no MCP error: %+v", name, c)
		}
	}
	if out.Answer.IsError || out.Answer.Thrown {
		t.Fatalf("answer_permission_request: %+v", out.Answer)
	}
	// The fake cloud got the one exact control_response.
	var got []fakecloud.Answer
	testutil.EventuallyWithin(t, 10*time.Second, "the control_response", func() bool {
		got = nil
		for _, a := range cloud.Answers(sid) {
			if a.RequestID == requestID {
				got = append(got, a)
			}
		}
		return len(got) > 0
	})
	if len(got) != 1 || !got[0].Matched {
		t.Fatalf("answers = %+v, want one that settles the prompt", got)
	}
	var env struct {
		Type     string `json:"type"`
		Response struct {
			Subtype   string `json:"subtype"`
			RequestID string `json:"request_id"`
			Response  struct {
				Behavior     string            `json:"behavior"`
				UpdatedInput map[string]string `json:"updatedInput"`
			} `json:"response"`
		} `json:"response"`
	}
	if err := json.Unmarshal(got[0].Raw, &env); err != nil || env.Type != "control_response" || env.Response.Subtype != "success" ||
		env.Response.RequestID != requestID || env.Response.Response.Behavior != "allow" ||
		env.Response.Response.UpdatedInput["command"] != "go test ./..." {
		t.Fatalf("control_response %s", got[0].Raw)
	}
	// The message sent over MCP reached the remote session.
	posted := func() bool {
		for _, m := range cloud.Posted(sid) {
			if m.User != nil && strings.Contains(m.User.Content.Text(), sendText) {
				return true
			}
		}
		return false
	}
	if !testutil.Within(30*time.Second, posted) {
		t.Errorf("the remote session never got %q", sendText)
	}
}
