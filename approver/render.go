package approver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sessiongateway/gateway/internal/jsonx"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/message/answerfmt"
)

// The texts below are read by people and by models: each says what
// happened in its first sentence and gives the exact reply forms.

// promptText is the notice of a new prompt: who asks, for what, and how to
// answer.
func (a *Approver) promptText(ctx context.Context, p message.PermissionRequest) string {
	var b strings.Builder
	from := a.sessionLabel(ctx, p)
	if len(p.Questions) > 0 {
		fmt.Fprintf(&b, "Question %s from %s, asked with %s:\n", p.ID, from, message.OneLine(p.ToolName, 100))
		for i, q := range p.Questions {
			fmt.Fprintf(&b, "  %d. %s", i+1, message.OneLine(q.Question, 300))
			if q.Header != "" {
				fmt.Fprintf(&b, " [%s]", message.OneLine(q.Header, 60))
			}
			if q.MultiSelect {
				b.WriteString(" (choose one or more)\n")
			} else {
				b.WriteString(" (choose one)\n")
			}
			for j, o := range q.Options {
				fmt.Fprintf(&b, "       %d) %s\n", j+1, message.OneLine(o, 200))
			}
		}
	} else {
		if message.KindOf(p.ToolName) == message.PromptPlan {
			fmt.Fprintf(&b, "Plan approval %s from %s: the session asks to leave plan mode and carry out its plan.\n", p.ID, from)
		} else {
			fmt.Fprintf(&b, "Permission request %s from %s: the tool %s wants to run.\n", p.ID, from, message.OneLine(p.ToolName, 100))
		}
		if d := message.OneLine(p.Description, 300); d != "" {
			fmt.Fprintf(&b, "Description: %s\n", d)
		}
		fmt.Fprintf(&b, "Input:\n%s\n", prettyInput(p.Input))
		for i, u := range p.Suggestions {
			if i == 0 {
				b.WriteString("The session suggests (add one to an allow with --suggestion N):\n")
			}
			fmt.Fprintf(&b, "  %d) %s\n", i+1, u)
		}
	}
	b.WriteString("\n")
	b.WriteString(replyForms(p))
	where := "on claude.ai"
	if p.Source == message.SourceHook || p.Source == message.SourceChannel {
		where = "at the session's own terminal"
	}
	b.WriteString("The first answer wins: the request may also be answered with `gateway allow`, `gateway deny` or " + where + ".")
	return b.String()
}

// sessionLabel names the prompt's session: its name when a roster knows
// it, and its address.
func (a *Approver) sessionLabel(ctx context.Context, p message.PermissionRequest) string {
	kind := "session"
	switch {
	case p.Source == message.SourceHook || p.Source == message.SourceChannel:
		kind = "local session"
	case p.Leg == message.ProtocolRemote:
		kind = "remote session"
	}
	addr := p.Address
	if addr == "" {
		addr = p.SessionID
	}
	if p.Leg == message.ProtocolFederation && p.Host != "" {
		// Pending on another host: the reply is carried there.
		return fmt.Sprintf("session %s on host %s", addr, p.Host)
	}
	name := p.Name
	if _, s, err := a.r.Resolve(ctx, addr); err == nil && s.Name != "" {
		name = s.Name
	}
	if name != "" {
		return fmt.Sprintf("%s %q (%s)", kind, message.OneLine(name, 100), addr)
	}
	return kind + " " + addr
}

// replyForms gives the exact replies a prompt takes, with an example that
// parses.
func replyForms(p message.PermissionRequest) string {
	var b strings.Builder
	b.WriteString("Reply to this message with one line, one of:\n")
	if len(p.Questions) == 0 {
		fmt.Fprintf(&b, "  allow %s\n  deny %s <reason>\n", p.ID, p.ID)
		b.WriteString("The reason is told to the session's model. ")
		switch {
		case message.KindOf(p.ToolName) == message.PromptPlan:
			fmt.Fprintf(&b, "To approve the plan and switch the permission mode in the same answer: allow %s --mode acceptEdits (modes: %s). ",
				p.ID, strings.Join(message.PermissionModes, ", "))
		case len(p.Suggestions) > 0:
			fmt.Fprintf(&b, "To allow and apply the session's suggestion 1 as well: allow %s --suggestion 1 (repeatable). ", p.ID)
		}
		b.WriteString(allowOptions)
		return b.String()
	}
	names := questionNames(p.Questions)
	ex, byNumber := make([]string, len(p.Questions)), make([]string, len(p.Questions))
	raw := make([]string, len(p.Questions))
	for i, q := range p.Questions {
		opt := "1"
		if len(q.Options) > 0 {
			opt = q.Options[0]
		}
		raw[i] = names[i] + "=" + opt
		ex[i], byNumber[i] = answerfmt.QuoteSpec(raw[i]), answerfmt.QuoteSpec(fmt.Sprintf("%d=1", i+1))
	}
	if _, err := answerfmt.ParseAnswers(p.Questions, raw); err != nil {
		ex = byNumber // labels that do not read back (odd spacing, "=" in a header): numbers do
	}
	fmt.Fprintf(&b, "  answer %s %s\n  deny %s <reason>\n", p.ID, strings.Join(ex, " "), p.ID)
	fmt.Fprintf(&b, "Name a question by its number, header or text, and an option by its number or label (answer %s %s works too); answer every question.",
		p.ID, strings.Join(byNumber, " "))
	for i, q := range p.Questions {
		if q.MultiSelect && len(q.Options) >= 2 {
			list := jsonList(q.Options[:2])
			fmt.Fprintf(&b, " A question marked \"choose one or more\" takes several options: repeat it (%s %s) or give a list: %s=%s.",
				answerfmt.QuoteSpec(names[i]+"="+q.Options[0]), answerfmt.QuoteSpec(names[i]+"="+q.Options[1]), answerfmt.ShellWord(names[i]), list)
			break
		}
	}
	b.WriteString("\n")
	return b.String()
}

// questionNames names each question the shortest way that reads back: its
// header when that names it alone, else its number.
func questionNames(qs []message.Question) []string {
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = fmt.Sprint(i + 1)
		if h := q.Header; h != "" && !strings.Contains(h, "=") {
			if j, err := answerfmt.PickQuestion(qs, strings.TrimSpace(h)); err == nil && j == i {
				names[i] = h
			}
		}
	}
	return names
}

// jsonList prints labels as a JSON list, leaving <, > and & as they are.
func jsonList(labels []string) string {
	b, _ := jsonx.Marshal(labels)
	return string(b)
}

// settledText announces a prompt that no longer needs an answer.
func settledText(p message.PermissionRequest) string {
	if p.State == message.PermissionCancelled {
		return fmt.Sprintf("Permission request %s (%s) was withdrawn by the session: nothing to answer.", p.ID, promptSummary(p))
	}
	by, verdict := "someone else", "answered"
	if p.Answer != nil {
		if p.Answer.By != "" {
			by = p.Answer.By
		}
		if by == "remote" {
			by = "another client of the session (claude.ai)"
		}
		verdict = fmt.Sprintf("answered (%s)", p.Answer.Behavior)
	}
	return fmt.Sprintf("Permission request %s (%s) was %s by %s: nothing left to answer.", p.ID, promptSummary(p), verdict, by)
}

// doneText confirms an answer the session's server took.
func doneText(p message.PermissionRequest, a message.PermissionAnswer) string {
	switch {
	case a.Behavior == message.BehaviorDeny && a.Message != "":
		return fmt.Sprintf("Denied %s (%s). The session's model is told: %s", p.ID, promptSummary(p), message.OneLine(a.Message, 300))
	case a.Behavior == message.BehaviorDeny:
		return fmt.Sprintf("Denied %s (%s).", p.ID, promptSummary(p))
	case len(a.Answers) > 0:
		parts := make([]string, 0, len(p.Questions))
		for _, q := range p.Questions {
			parts = append(parts, message.OneLine(q.Question, 100)+" = "+message.OneLine(strings.Join(a.Answers[q.Question], ", "), 200))
		}
		return fmt.Sprintf("Answered %s: %s.", p.ID, strings.Join(parts, "; "))
	}
	return fmt.Sprintf("Allowed %s (%s).", p.ID, promptSummary(p))
}

// unknownText answers a reply naming no prompt the gateway knows.
func (a *Approver) unknownText(id string) string {
	return fmt.Sprintf("Not applied: there is no permission request %s.\n%s%s", id, genericForms, a.pendingText())
}

// helpText answers a reply that starts with a verb but does not parse.
func (a *Approver) helpText(body string, err error) string {
	return fmt.Sprintf("The gateway could not read your reply %q: %v.\n%s%s", message.OneLine(answerfmt.ReplyLine(body), 200), err, genericForms, a.pendingText())
}

// allowOptions tells every option an allow reply takes.
const allowOptions = "An allow also takes --suggestion N (the session's suggestion N), --mode MODE (switch the permission mode), " +
	"--rule RULE (add a rule, such as 'Bash(npm test)'), --rule-destination D and --input JSON (the edited tool input, a JSON object).\n"

const genericForms = "Reply with one line, one of:\n" +
	"  allow <id> [--suggestion N] [--mode MODE] [--rule RULE] [--input JSON]\n" +
	"  deny <id> <reason>\n" +
	"  answer <id> \"Question=Option\" ...   (for questions; options by number or label)\n"

// pendingText lists the pending prompts, so a reply can name the right id.
func (a *Approver) pendingText() string {
	ps := a.r.Permissions()
	if len(ps) == 0 {
		return "No request is pending."
	}
	var b strings.Builder
	b.WriteString("Pending:")
	for i, p := range ps {
		if i == pendingShown {
			fmt.Fprintf(&b, "\n  and %d more (gateway permissions lists them all)", len(ps)-i)
			break
		}
		fmt.Fprintf(&b, "\n  %s  %s", p.ID, promptSummary(p))
	}
	return b.String()
}

// promptSummary is the tool and what it is about, on one short line.
func promptSummary(p message.PermissionRequest) string {
	tool := message.OneLine(p.ToolName, 60)
	if about := p.Summary(80); about != "" {
		return tool + ": " + about
	}
	return tool
}

// prettyInput is a tool input as indented JSON, cut to inputCap.
func prettyInput(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "(none)"
	}
	var b bytes.Buffer
	s := string(raw)
	if json.Indent(&b, raw, "", "  ") == nil {
		s = b.String()
	}
	if len(s) <= inputCap {
		return s
	}
	cut := inputCap
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s\n… (cut: %d of %d bytes shown; `gateway permissions --json` shows it whole)", s[:cut], cut, len(s))
}
