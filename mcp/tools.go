package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/message/answerfmt"
)

// Waits the tools allow.
const (
	DefaultWait = 30 * time.Second
	MaxWait     = 5 * time.Minute
	// MaxRead caps the messages one wait_for_messages returns.
	MaxRead = 100
)

type listIn struct {
	Protocol string `json:"protocol,omitempty" jsonschema:"only sessions of this protocol: claude, qwen, remote, federation or mcp"`
	Host     string `json:"host,omitempty" jsonschema:"only sessions reached through this federation host"`
	Name     string `json:"name,omitempty" jsonschema:"only sessions whose name contains this text (case-insensitive)"`
}

type sendIn struct {
	To   string `json:"to" jsonschema:"who to send to: a session name from list_sessions (NAME, NAME [ref], NAME@HOST for another host) or an address"`
	Text string `json:"text" jsonschema:"the message text"`
	Wait bool   `json:"wait,omitempty" jsonschema:"block until the message has a final receipt (delivered, dropped, failed...) or timeout_seconds pass"`
	// TimeoutSeconds bounds Wait.
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty" jsonschema:"how long wait blocks, in seconds (default 30, at most 300)"`
}

type waitIn struct {
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty" jsonschema:"how long to block when the inbox is empty, in seconds (default 30, at most 300; 0 uses the default)"`
	Cursor         uint64  `json:"cursor,omitempty" jsonschema:"next_cursor of your previous call: messages up to it are forgotten and never returned again; omit to continue after what was last returned (so does a cursor from an earlier connection, past anything this one returned)"`
	Max            int     `json:"max,omitempty" jsonschema:"at most this many messages (default and cap 100)"`
}

type statusIn struct {
	ID string `json:"id" jsonschema:"the id send_message returned"`
}

type permsIn struct {
	All bool `json:"all,omitempty" jsonschema:"also list recently answered and withdrawn prompts"`
}

type answerIn struct {
	ID       string `json:"id" jsonschema:"the prompt's id from list_permission_requests"`
	Behavior string `json:"behavior" jsonschema:"allow, deny, or answer (for an AskUserQuestion prompt: give answers)"`
	Message  string `json:"message,omitempty" jsonschema:"deny: why, told to the session's model"`
	// Input replaces the tool's input (allow).
	Input map[string]any `json:"input,omitempty" jsonschema:"allow: replace the tool's input with this object"`
	// Answers are Question=Option pairs, as `gateway answer` takes them.
	Answers []string `json:"answers,omitempty" jsonschema:"answer: one 'Question=Option' per question (Question: its text, header or number; Option: its label or number)"`
	// Suggestions pick the prompt's own suggestions by number, as
	// `gateway allow --suggestion N` does.
	Suggestions []int `json:"suggestions,omitempty" jsonschema:"allow: the prompt's suggestions to apply, by their number (from 1) in list_permission_requests, e.g. to always allow"`
	// Rules are permission rules added with the answer.
	Rules           []string `json:"rules,omitempty" jsonschema:"allow: permission rules to add with the answer, as Tool or Tool(content), e.g. 'Bash(go test ./...)'"`
	RuleDestination string   `json:"rule_destination,omitempty" jsonschema:"where the rules are saved: userSettings, projectSettings, localSettings (default) or session"`
	// Mode switches the session's permission mode in the same answer.
	Mode string `json:"mode,omitempty" jsonschema:"allow: switch the session's permission mode in the same answer (a plan approval): default, acceptEdits, plan or bypassPermissions"`
}

type outputIn struct {
	Session string `json:"session" jsonschema:"the remote session: its name or address from list_sessions (protocol remote)"`
	Cursor  int64  `json:"cursor,omitempty" jsonschema:"next_cursor of your previous call; omit for everything the gateway still keeps"`
}

func (cn *conn) addTools() {
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true}
	sdk.AddTool(cn.srv, &sdk.Tool{Name: "list_sessions", Annotations: ro,
		Description: "List the sessions you can message through the gateway: Claude Code, Qwen Code, claude.ai remote sessions, other MCP clients (you among them) and other hosts' sessions. Each has a name to use as send_message's to."}, cn.listSessions)
	sdk.AddTool(cn.srv, &sdk.Tool{Name: "send_message",
		Description: "Send a text message to a session by name. Returns the message id and its receipt (sent, delivered, dropped, failed...); with wait, blocks until the receipt is final. Answers come back to your inbox: read them with wait_for_messages."}, cn.sendMessage)
	sdk.AddTool(cn.srv, &sdk.Tool{Name: "wait_for_messages",
		Description: "Read messages other sessions sent you, oldest first, blocking up to timeout_seconds while none is waiting. Pass the returned next_cursor next time so nothing is read twice. Reply to a message with send_message to its from."}, cn.waitMessages)
	sdk.AddTool(cn.srv, &sdk.Tool{Name: "get_message_status", Annotations: ro,
		Description: "Where a message you sent stands: its status and every receipt."}, cn.messageStatus)
	sdk.AddTool(cn.srv, &sdk.Tool{Name: "list_permission_requests", Annotations: ro,
		Description: "Pending permission prompts (a tool a session wants to run, or a question), of remote sessions and of local ones (source hook or channel, with the session's name), oldest first, each with the id answer_permission_request takes."}, cn.listPermissions)
	sdk.AddTool(cn.srv, &sdk.Tool{Name: "answer_permission_request",
		Description: "Answer a pending permission prompt: allow (optionally with a replaced input), deny (with a message for the model), or answer a question prompt; optionally apply the prompt's suggestions by number, add permission rules, and switch the permission mode in the same answer."}, cn.answerPermission)
	sdk.AddTool(cn.srv, &sdk.Tool{Name: "remote_session_output", Annotations: ro,
		Description: "Recent output of a claude.ai remote session as a transcript, from cursor on; pass the returned next_cursor next time to read only what is new."}, cn.remoteOutput)
	cn.addHostedTools()
}

// result is v as the tool's JSON text.
func result(v any) (*sdk.CallToolResult, any, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil, nil
}

func (cn *conn) listSessions(ctx context.Context, _ *sdk.CallToolRequest, in listIn) (*sdk.CallToolResult, any, error) {
	if err := cn.need(api.ScopeRead); err != nil {
		return nil, nil, err
	}
	all := cn.s.cfg.Router.Sessions(ctx)
	out := []message.Session{}
	for _, s := range all {
		if (in.Protocol == "" || string(s.Protocol) == in.Protocol) && (in.Host == "" || s.Host == in.Host) &&
			(in.Name == "" || strings.Contains(strings.ToLower(s.Name), strings.ToLower(in.Name))) {
			out = append(out, s)
		}
	}
	return result(map[string]any{"sessions": out})
}

// MaxText caps a message's text: what one message line carries.
const MaxText = 1 << 20

func (cn *conn) sendMessage(ctx context.Context, _ *sdk.CallToolRequest, in sendIn) (*sdk.CallToolResult, any, error) {
	if err := cn.need(api.ScopeSend); err != nil {
		return nil, nil, err
	}
	me, err := cn.me()
	if err != nil {
		return nil, nil, err
	}
	switch {
	case strings.TrimSpace(in.To) == "":
		return nil, nil, errors.New("to is empty: give a session name from list_sessions")
	case in.Text == "":
		return nil, nil, errors.New("text is empty: give the message to send")
	case len(in.Text) > MaxText:
		return nil, nil, fmt.Errorf("text is %d bytes, over the %d-byte cap: send it in parts", len(in.Text), MaxText)
	}
	_, target, err := cn.s.cfg.Router.Resolve(ctx, in.To)
	if err != nil {
		return nil, nil, fmt.Errorf("%v (the list_sessions tool lists them)", err)
	}
	id, err := cn.s.cfg.Leg.Submit(ctx, me, target, in.Text)
	if err != nil {
		return nil, nil, err
	}
	if in.Wait {
		wctx, cancel := context.WithTimeout(ctx, waitFor(in.TimeoutSeconds))
		defer cancel()
		return cn.status(wctx, id, true)
	}
	return cn.status(ctx, id, false)
}

// status is where the message id a client sent stands, as the leg tracks
// it (with final, once final or ctx ends), else as the router remembers
// it.
func (cn *conn) status(ctx context.Context, id string, final bool) (*sdk.CallToolResult, any, error) {
	to, t, err := cn.s.cfg.Leg.Sent(ctx, id, final)
	if err != nil {
		if o, rerr := cn.s.cfg.Router.Message(id); rerr == nil {
			return result(Status{ID: id, To: o.Message.ToName, Status: o.Status.String(), Receipts: o.Receipts})
		}
		return nil, nil, err
	}
	return result(Status{ID: id, To: to, Status: t.Status.String(), Receipts: t.Receipts})
}

// waitFor bounds a client's timeout_seconds, compared as a float so that a
// huge one (1e300) is MaxWait rather than whatever its overflow gives.
func waitFor(secs float64) time.Duration {
	switch {
	case !(secs > 0): // zero, negative, NaN
		return DefaultWait
	case secs >= MaxWait.Seconds():
		return MaxWait
	}
	return time.Duration(secs * float64(time.Second))
}

// Status is where a message a client sent stands.
type Status struct {
	ID       string            `json:"id"`
	To       string            `json:"to"`
	Status   string            `json:"status"`
	Receipts []message.Receipt `json:"receipts"`
}

// Inbound is one message as wait_for_messages returns it.
type Inbound struct {
	Seq         uint64    `json:"seq"`
	ID          string    `json:"id"`
	From        string    `json:"from"`
	FromAddress string    `json:"from_address,omitempty"`
	Protocol    string    `json:"protocol,omitempty"`
	Text        string    `json:"text"`
	Time        time.Time `json:"time"`
}

func (cn *conn) waitMessages(ctx context.Context, _ *sdk.CallToolRequest, in waitIn) (*sdk.CallToolResult, any, error) {
	if err := cn.need(api.ScopeRead); err != nil {
		return nil, nil, err
	}
	me, err := cn.me()
	if err != nil {
		return nil, nil, err
	}
	limit := in.Max
	if limit <= 0 || limit > MaxRead {
		limit = MaxRead
	}
	wctx, cancel := context.WithTimeout(ctx, waitFor(in.TimeoutSeconds))
	defer cancel()
	msgs := []Inbound{}
	next, err := cn.s.cfg.Leg.Read(wctx, me, in.Cursor, limit, func(seq uint64, m message.Message) {
		msgs = append(msgs, Inbound{Seq: seq, ID: m.ID, From: m.FromName, FromAddress: m.From,
			Protocol: string(m.Protocol), Text: m.Body, Time: m.Time})
	})
	if err != nil {
		return nil, nil, errors.New("this client has left the gateway's roster")
	}
	return result(map[string]any{"messages": msgs, "next_cursor": next, "unread": cn.s.cfg.Leg.Unread(me), "you": me.Name})
}

func (cn *conn) messageStatus(ctx context.Context, _ *sdk.CallToolRequest, in statusIn) (*sdk.CallToolResult, any, error) {
	if err := cn.need(api.ScopeRead); err != nil {
		return nil, nil, err
	}
	return cn.status(ctx, in.ID, false)
}

func (cn *conn) listPermissions(ctx context.Context, _ *sdk.CallToolRequest, in permsIn) (*sdk.CallToolResult, any, error) {
	if err := cn.need(api.ScopeRead); err != nil {
		return nil, nil, err
	}
	ps := cn.s.cfg.Router.Permissions()
	if in.All {
		ps = append(ps, cn.s.cfg.Router.SettledPermissions()...)
	}
	if ps == nil {
		ps = []message.PermissionRequest{}
	}
	return result(map[string]any{"requests": ps})
}

func (cn *conn) answerPermission(ctx context.Context, _ *sdk.CallToolRequest, in answerIn) (*sdk.CallToolResult, any, error) {
	if err := cn.need(api.ScopeApprove); err != nil {
		return nil, nil, err
	}
	me, err := cn.me()
	if err != nil {
		return nil, nil, err
	}
	r := cn.s.cfg.Router
	req, err := r.Permission(in.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("%v (call list_permission_requests for the pending ids)", err)
	}
	a := message.PermissionAnswer{By: me.Address, Message: in.Message, RuleDestination: in.RuleDestination}
	switch in.Behavior {
	case "allow":
		a.Behavior = message.BehaviorAllow
		if in.Input != nil {
			b, err := json.Marshal(in.Input)
			if err != nil {
				return nil, nil, fmt.Errorf("input: %v", err)
			}
			a.UpdatedInput = b
		}
	case "deny":
		a.Behavior = message.BehaviorDeny
	case "answer":
		if len(req.Questions) == 0 {
			return nil, nil, fmt.Errorf("%s is a %s prompt, not a question: use behavior allow or deny", req.ID, req.ToolName)
		}
		answers, err := answerfmt.ParseAnswers(req.Questions, in.Answers)
		if err != nil {
			return nil, nil, fmt.Errorf("answers: %v", err)
		}
		a.Behavior, a.Answers = message.BehaviorAllow, answers
	default:
		return nil, nil, fmt.Errorf("behavior %q: want allow, deny or answer", in.Behavior)
	}
	for _, s := range in.Rules {
		rule, err := message.ParseRule(s)
		if err != nil {
			return nil, nil, fmt.Errorf("rules: %v", err)
		}
		a.Rules = append(a.Rules, rule)
	}
	if in.RuleDestination != "" && !slices.Contains(message.RuleDestinations, in.RuleDestination) {
		return nil, nil, fmt.Errorf("rule_destination %q: want one of %s", in.RuleDestination, strings.Join(message.RuleDestinations, ", "))
	}
	// Suggestion numbers and the mode are checked by the router, with the
	// same rules as the CLI's and the API's answers.
	a.Suggestions, a.Mode = in.Suggestions, in.Mode
	settled, err := r.AnswerPermission(ctx, req.ID, a)
	if err != nil {
		return nil, nil, err
	}
	return result(map[string]any{"request": settled})
}

func (cn *conn) remoteOutput(ctx context.Context, _ *sdk.CallToolRequest, in outputIn) (*sdk.CallToolResult, any, error) {
	if err := cn.need(api.ScopeRead); err != nil {
		return nil, nil, err
	}
	_, s, err := cn.s.cfg.Router.Resolve(ctx, in.Session)
	if err != nil {
		return nil, nil, fmt.Errorf("%v (call list_sessions with protocol remote)", err)
	}
	if s.Protocol != message.ProtocolRemote {
		return nil, nil, fmt.Errorf("%s is a %s session: only remote (claude.ai) sessions have output here", s.Name, s.Protocol)
	}
	text, next := transcript(cn.s.cfg.Router.Hub(), s.SessionID, in.Cursor)
	return result(map[string]any{"session": s.Name, "output": text, "next_cursor": next})
}
