package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/message"
)

// startIn is start_session's input: a hosted session to start.
type startIn struct {
	Agent          string `json:"agent" jsonschema:"the CLI to run: claude (Claude Code) or qwen (Qwen Code)"`
	Cwd            string `json:"cwd" jsonschema:"the absolute directory the session works in, one of the gateway user's"`
	Name           string `json:"name,omitempty" jsonschema:"its name, to message it by (lowercase letters, digits, '.', '_', '-'); default agent-XXXXXX"`
	Prompt         string `json:"prompt,omitempty" jsonschema:"its first user turn"`
	PermissionMode string `json:"permission_mode,omitempty" jsonschema:"default, acceptEdits, plan or bypassPermissions"`
	Model          string `json:"model,omitempty" jsonschema:"its model; empty for the CLI's default"`
}

// addHostedTools registers the tools that start and stop hosted sessions.
func (cn *conn) addHostedTools() {
	sdk.AddTool(cn.srv, &sdk.Tool{Name: "start_session",
		Description: "Start a Claude Code or Qwen Code session that the gateway runs headless in a directory: it is listed as hosted:NAME, takes messages sent to it by name (send_message) as its turns, and its permission prompts show in list_permission_requests."}, cn.startSession)
}

func (cn *conn) startSession(ctx context.Context, _ *sdk.CallToolRequest, in startIn) (*sdk.CallToolResult, any, error) {
	if err := cn.need(api.ScopeSend); err != nil {
		return nil, nil, err
	}
	s, err := cn.s.cfg.Router.StartSession(ctx, message.StartSpec{Agent: in.Agent, Cwd: in.Cwd, Name: in.Name, Prompt: in.Prompt,
		PermissionMode: in.PermissionMode, Model: in.Model})
	if err != nil {
		return nil, nil, err
	}
	return result(map[string]any{"session": s})
}
