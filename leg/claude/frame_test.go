package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/internal/jsonx"
	"github.com/sessiongateway/gateway/message"
)

const (
	sockA = "uds:/tmp/cc-socks/100.sock"
	sockB = "uds:/tmp/cc-socks/200.sock"
	idA   = "8f14e45f-ceea-4e7a-9b1c-2d3e4f5a6b7c"
	idB   = "c9f0f895-fb98-4b91-8f7a-1e2d3c4b5a69"
)

func TestParseLine(t *testing.T) {
	env := Envelope{From: sockA, FromName: "a", FromMode: "bypass", Body: "hi"}.String()
	content, _ := json.Marshal(env)
	tests := []struct {
		name    string
		line    string
		want    Line
		wantErr error
	}{
		{"an auth line gives its token",
			`{"type":"auth","token":"0123456789abcdef0123456789abcdef"}`,
			Line{Auth: &Auth{Type: TypeAuth, Token: "0123456789abcdef0123456789abcdef"}}, nil},
		{"an auth line without a token authenticates nothing",
			`{"type":"auth"}`, Line{Auth: &Auth{Type: TypeAuth}}, nil},
		{"an auth line with a numeric token is refused",
			`{"type":"auth","token":5}`, Line{}, ErrBadField},
		{"the protocol's user frame parses with its attachment",
			`{"msgV":1,"msg_id":"` + idA + `","type":"user","message":{"role":"user","content":` + string(content) +
				`},"priority":"next","from":"` + sockA + `","file_attachments":[{"path":"/s/a","file_name":"a","file_size":3,"sha256":"` +
				strings.Repeat("0", 64) + `","media_type":"text/plain"}]}`,
			Line{Frame: &Frame{MsgV: 1, MsgID: idA, Type: TypeUser, Message: &UserMessage{Role: "user", Content: env},
				Priority: PriorityNext, From: sockA, FileAttachments: []message.Attachment{{Path: "/s/a", FileName: "a",
					FileSize: 3, SHA256: strings.Repeat("0", 64), MediaType: "text/plain"}}}}, nil},
		{"a user frame keeps session_id, from_plugin and local_chain",
			`{"type":"user","message":{"role":"user","content":"x"},"session_id":"s1","from_plugin":"p@m","local_chain":"` + tok1 + `"}`,
			Line{Frame: &Frame{Type: TypeUser, Message: &UserMessage{Role: "user", Content: "x"}, SessionID: "s1",
				FromPlugin: "p@m", LocalChain: json.RawMessage(`"` + tok1 + `"`)}}, nil},
		{"a held receipt parses",
			`{"type":"control","action":"peer_message_status","status":"held","reason":"r","from":"` + sockB +
				`","orig_msg_id":"` + idA + `","msgV":1,"msg_id":"` + idB + `"}`,
			Line{Frame: &Frame{Type: TypeControl, Action: ActionPeerMessageStatus, Status: WireHeld, Reason: "r",
				From: sockB, OrigMsgID: idA, MsgV: 1, MsgID: idB}}, nil},
		{"a dropped receipt keeps its reason and ids",
			`{"type":"control","action":"peer_message_status","status":"dropped","drop_reason":"rate-limited","dropped_msg_ids":["` + idA + `","` + idB + `"]}`,
			Line{Frame: &Frame{Type: TypeControl, Action: ActionPeerMessageStatus, Status: WireDropped,
				DropReason: "rate-limited", DroppedMsgIDs: []string{idA, idB}}}, nil},
		{"an idle notice parses",
			`{"type":"control","action":"peer_idle_notice","orig_msg_id":"` + idA + `","state":"idle","finished_at":1789216922033,"detail":"done","from":"` + sockB + `","from_mode":"bypass","msgV":1,"msg_id":"` + idB + `"}`,
			Line{Frame: &Frame{Type: TypeControl, Action: ActionPeerIdleNotice, OrigMsgID: idA, State: IdleStateIdle,
				FinishedAt: 1789216922033, Detail: "done", From: sockB, FromMode: "bypass", MsgV: 1, MsgID: idB}}, nil},
		{"a yield request keeps its fields without interpreting them",
			`{"type":"control","action":"yield_artifact_replies","slugs":["a"],"reason":"claim","sent_at":5,"requester":{"cwd":"/x"}}`,
			Line{Frame: &Frame{Type: TypeControl, Action: ActionYieldArtifactReplies, Slugs: []string{"a"}, Reason: "claim",
				SentAt: 5, Requester: json.RawMessage(`{"cwd":"/x"}`)}}, nil},
		{"null counts as absent",
			`{"type":"control","action":null,"msg_id":null,"dropped_msg_ids":null}`,
			Line{Frame: &Frame{Type: TypeControl}}, nil},
		{"keys match case exactly, so a TYPE key fills nothing",
			`{"type":"control","TYPE":"user","Action":"rename"}`,
			Line{Frame: &Frame{Type: TypeControl}}, nil},
		{"surrounding white space is fine",
			" \t{\"type\":\"auth\",\"token\":\"t\"}\r\n", Line{Auth: &Auth{Type: TypeAuth, Token: "t"}}, nil},
		{"another type is refused", `{"type":"assistant"}`, Line{}, ErrUnknownType},
		{"a missing type is refused", `{"token":"t"}`, Line{}, ErrMissingType},
		{"a numeric type is refused", `{"type":1}`, Line{}, ErrMissingType},
		{"a null type is refused", `{"type":null}`, Line{}, ErrMissingType},
		{"an array is not an object", `[{"type":"user"}]`, Line{}, ErrNotObject},
		{"a string is not an object", `"user"`, Line{}, ErrNotObject},
		{"broken JSON is a syntax error", `{"type":"user"`, Line{}, ErrSyntax},
		{"text after the object is a syntax error", `{"type":"auth"} {"type":"auth"}`, Line{}, ErrSyntax},
		{"a blank line is reported as blank", "  \r", Line{}, ErrBlankLine},
		{"invalid UTF-8 is refused", "{\"type\":\"auth\",\"token\":\"\xff\"}", Line{}, ErrInvalidUTF8},
		{"a repeated key is refused", `{"type":"auth","type":"user"}`, Line{}, ErrDuplicateKey},
		{"a key repeated through an escape is refused", `{"type":"auth","\u0074ype":"user"}`, Line{}, ErrDuplicateKey},
		{"a repeated key inside the message is refused",
			`{"type":"user","message":{"role":"user","content":"a","content":"b"}}`, Line{}, ErrDuplicateKey},
		{"the same key in two sibling objects is fine",
			`{"type":"user","message":{"role":"user","content":"a"},"requester":{"role":"x"}}`,
			Line{Frame: &Frame{Type: TypeUser, Message: &UserMessage{Role: "user", Content: "a"}, Requester: json.RawMessage(`{"role":"x"}`)}}, nil},
		{"a user frame without a message is refused", `{"type":"user"}`, Line{}, ErrNoContent},
		{"a user frame with empty content is refused",
			`{"type":"user","message":{"role":"user","content":""}}`, Line{}, ErrNoContent},
		{"a user frame whose content is a list is refused",
			`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"x"}]}}`, Line{}, ErrBadField},
		{"a message that is not an object is refused", `{"type":"user","message":"hi"}`, Line{}, ErrBadField},
		{"nesting deeper than jsonx.MaxDepth is refused unparsed",
			`{"type":"user","x":` + strings.Repeat("[", 1<<16), Line{}, jsonx.ErrTooDeep},
		{"a too-deep array is refused as deep, not merely as not an object",
			strings.Repeat("[", jsonx.MaxDepth+1), Line{}, jsonx.ErrTooDeep},
		{"a fractional msgV is refused", `{"type":"control","msgV":1.5}`, Line{}, ErrBadField},
		{"a file size given as a string is refused",
			`{"type":"user","message":{"role":"user","content":"x"},"file_attachments":[{"file_size":"3"}]}`, Line{}, ErrBadField},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLine([]byte(tt.line))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("ParseLine error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseLine error = %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseLine =\n%s\nwant\n%s", dumpLine(got), dumpLine(tt.want))
			}
		})
	}
}

func dumpLine(l Line) string {
	b, _ := json.Marshal(struct {
		Auth  *Auth
		Frame *Frame
	}{l.Auth, l.Frame})
	return string(b)
}

func TestBuildersRoundTrip(t *testing.T) {
	env := Envelope{From: sockA, FromSession: "s-1", FromName: "worker", FromMode: "prompting",
		FromPlugin: "p@m", Body: "a </cross-session-message> b"}
	atts := []message.Attachment{{Path: "/spool/x", FileName: "x", FileSize: 1, SHA256: strings.Repeat("a", 64)}}
	tests := []struct {
		name  string
		frame Frame
		check func(t *testing.T, f Frame)
	}{
		{"a user frame carries the envelope and moves the plugin to from_plugin",
			NewUserFrame(sockA, idA, env, atts), func(t *testing.T, f Frame) {
				if f.MsgV != 1 || f.MsgID != idA || f.Type != TypeUser || f.Priority != PriorityNext || f.From != sockA {
					t.Fatalf("header %+v", f)
				}
				if f.FromPlugin != "p@m" || strings.Contains(f.Message.Content, "from-plugin") {
					t.Fatalf("plugin: frame %q, content %q", f.FromPlugin, f.Message.Content)
				}
				c := ParseContent(f.Message.Content)
				want := env
				want.FromPlugin = ""
				if !c.Attested || !envEqual(c.Envelope, want) {
					t.Fatalf("content %+v", c)
				}
				if !reflect.DeepEqual(f.FileAttachments, atts) {
					t.Fatalf("attachments %+v", f.FileAttachments)
				}
			}},
		{"a held receipt carries Claude Code's reason text",
			NewStatusReceipt(sockB, idA, WireHeld, "", ""), func(t *testing.T, f Frame) {
				if f.Type != TypeControl || f.Action != ActionPeerMessageStatus || f.Status != WireHeld ||
					f.OrigMsgID != idA || f.From != sockB || !strings.Contains(f.Reason, "held") {
					t.Fatalf("receipt %+v", f)
				}
			}},
		{"a receipt keeps a reason of our own",
			NewStatusReceipt(sockB, idA, WireDenied, "", "no thanks"), func(t *testing.T, f Frame) {
				if f.Reason != "no thanks" {
					t.Fatalf("reason %q", f.Reason)
				}
			}},
		{"a drop receipt carries the wire drop reason and ids",
			NewDropReceipt(sockB, idA, message.DropHopLoop, idA, idB), func(t *testing.T, f Frame) {
				if f.Status != WireDropped || f.DropReason != "hop-loop" || len(f.DroppedMsgIDs) != 2 {
					t.Fatalf("receipt %+v", f)
				}
			}},
		{"an idle notice answers its subscription",
			NewIdleNotice(sockB, idA, IdleStateExited, 1789216922033, "bye", "bypass"), func(t *testing.T, f Frame) {
				if f.Action != ActionPeerIdleNotice || f.OrigMsgID != idA || f.State != "exited" ||
					f.FinishedAt != 1789216922033 || f.Detail != "bye" || f.FromMode != "bypass" {
					t.Fatalf("notice %+v", f)
				}
			}},
		{"a subscription carries its own id",
			NewNotifyWhenIdle(sockA, idB, "prompting"), func(t *testing.T, f Frame) {
				if f.Action != ActionNotifyWhenIdle || f.MsgID != idB || f.From != sockA || f.FromMode != "prompting" {
					t.Fatalf("subscription %+v", f)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.frame.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if bytes.ContainsAny(b, "\n") {
				t.Fatalf("Marshal wrote a newline: %s", b)
			}
			l, err := ParseLine(b)
			if err != nil || l.Frame == nil {
				t.Fatalf("ParseLine(%s) = %+v, %v", b, l, err)
			}
			if !reflect.DeepEqual(*l.Frame, tt.frame) {
				t.Fatalf("round trip changed\n%+v\ninto\n%+v", tt.frame, *l.Frame)
			}
			tt.check(t, *l.Frame)
		})
	}
	t.Run("receipts and notices get fresh uuid v4 message ids", func(t *testing.T) {
		a, b := NewStatusReceipt(sockB, idA, WireHeld, "", ""), NewStatusReceipt(sockB, idA, WireHeld, "", "")
		if a.MsgID == b.MsgID || len(a.MsgID) != 36 || a.MsgID[14] != '4' {
			t.Fatalf("ids %q and %q", a.MsgID, b.MsgID)
		}
	})
}

func TestMarshalLeavesAngleBracketsAlone(t *testing.T) {
	f := NewUserFrame(sockA, idA, Envelope{From: sockA, Body: "a & b"}, nil)
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"<cross-session-message from=`)) || !bytes.Contains(b, []byte("a & b")) {
		t.Fatalf("escaped: %s", b)
	}
}

func TestStatusMapping(t *testing.T) {
	tests := []struct {
		wire   WireStatus
		detail string
		want   message.Status
	}{
		{WireHeld, "", message.StatusHeld},
		{WireDelivered, "", message.StatusDelivered},
		{WireDenied, "", message.StatusDenied},
		{WireExpired, "", message.StatusExpired},
		{WireExpired, DetailRefused, message.StatusRefused},
		{WireDropped, "", message.StatusDropped},
		{WireRefused, "", message.StatusRefused},
		{WireHeld, "anything", message.StatusHeld},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s with detail %q is %v", tt.wire, tt.detail, tt.want), func(t *testing.T) {
			got, ok := StatusOf(tt.wire, tt.detail)
			if !ok || got != tt.want {
				t.Fatalf("StatusOf = %v, %v", got, ok)
			}
			if tt.wire == WireRefused {
				return // accepted, never sent
			}
			w, d, ok := WireOf(tt.want)
			if !ok || w != tt.wire || (d != tt.detail && tt.detail != "anything") {
				t.Fatalf("WireOf(%v) = %v, %q, %v", tt.want, w, d, ok)
			}
		})
	}
	t.Run("refused travels as expired with status_detail refused", func(t *testing.T) {
		f, ok := NewReceipt(sockB, idA, message.StatusRefused, "")
		if !ok || f.Status != WireExpired || f.StatusDetail != DetailRefused || !strings.Contains(f.Reason, "not accepting") {
			t.Fatalf("receipt %+v", f)
		}
	})
	t.Run("statuses no receipt carries have no wire form", func(t *testing.T) {
		for _, s := range []message.Status{message.StatusQueued, message.StatusSent, message.StatusMisaddressed, message.StatusFailed} {
			if _, ok := NewReceipt(sockB, idA, s, ""); ok {
				t.Fatalf("%v got a receipt", s)
			}
		}
	})
	t.Run("an unknown wire status maps to nothing", func(t *testing.T) {
		if _, ok := StatusOf("lost", ""); ok {
			t.Fatal("mapped lost")
		}
	})
}

func TestReceiptOf(t *testing.T) {
	tests := []struct {
		name string
		in   *Frame
		want *message.Receipt
	}{
		{"a refused receipt reads as refused with its detail",
			&Frame{Type: TypeControl, Action: ActionPeerMessageStatus, Status: WireExpired, StatusDetail: "refused", OrigMsgID: idA, From: sockB, Reason: "r"},
			&message.Receipt{MsgID: idA, Status: message.StatusRefused, Detail: "refused", From: sockB, Reason: "r"}},
		{"a dropped receipt keeps its drop reason",
			&Frame{Type: TypeControl, Action: ActionPeerMessageStatus, Status: WireDropped, DropReason: "duplicate", OrigMsgID: idA},
			&message.Receipt{MsgID: idA, Status: message.StatusDropped, DropReason: message.DropDuplicate}},
		{"a drop reason on another status is not kept",
			&Frame{Type: TypeControl, Action: ActionPeerMessageStatus, Status: WireHeld, DropReason: "duplicate", OrigMsgID: idA},
			&message.Receipt{MsgID: idA, Status: message.StatusHeld}},
		{"an unknown status is no receipt",
			&Frame{Type: TypeControl, Action: ActionPeerMessageStatus, Status: "lost"}, nil},
		{"another action is no receipt",
			&Frame{Type: TypeControl, Action: ActionPeerIdleNotice, Status: WireHeld}, nil},
		{"a user frame is no receipt", &Frame{Type: TypeUser, Action: ActionPeerMessageStatus, Status: WireHeld}, nil},
		{"nothing is no receipt", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ReceiptOf(tt.in)
			if ok != (tt.want != nil) {
				t.Fatalf("ReceiptOf ok = %v", ok)
			}
			if tt.want != nil && got != *tt.want {
				t.Fatalf("ReceiptOf = %+v, want %+v", got, *tt.want)
			}
		})
	}
}

func TestAuthTokenStaysOutOfLogs(t *testing.T) {
	a := Auth{Type: TypeAuth, Token: "s3cr3t-token"}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("auth", "line", a)
	out := buf.String() + fmt.Sprint(a) + fmt.Sprintf("%v %s %+v %#v", a, a, a, a)
	if strings.Contains(out, "s3cr3t") {
		t.Fatalf("token printed: %s", out)
	}
	b, err := a.Marshal()
	if err != nil || string(b) != `{"type":"auth","token":"s3cr3t-token"}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
}
