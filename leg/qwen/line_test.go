package qwen

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/internal/jsonx"
	"github.com/sessiongateway/gateway/message"
)

func TestParseLine(t *testing.T) {
	user := func(extra string) string {
		return `{"msgV":1,"msgId":"m-1","type":"user"` + extra + `,"message":{"role":"user","content":"hi"}}`
	}
	tests := []struct {
		name string
		line string
		want Line
		err  error
	}{
		{"an auth line carries its token", `{"msgV":1,"type":"auth","token":"abc"}`,
			Line{Auth: &Auth{Token: "abc"}}, nil},
		{"an auth line needs no msgId", `{"type":"auth","token":"abc","msgV":0}`,
			Line{Auth: &Auth{Token: "abc"}}, nil},
		{"an auth line with an empty token authenticates nothing", `{"msgV":1,"type":"auth","token":""}`, Line{}, ErrNoToken},
		{"an auth line with a numeric token is refused", `{"msgV":1,"type":"auth","token":5}`, Line{}, ErrNoToken},
		{"a minimal user frame reads as priority next", user(""),
			Line{User: &UserFrame{MsgID: "m-1", Content: "hi"}}, nil},
		{"every user field is read", user(`,"from":"/s/1.sock","replyToken":"rt","fromName":"n","fromMode":"prompting","toSessionId":"s1","priority":"now"`),
			Line{User: &UserFrame{MsgID: "m-1", From: "/s/1.sock", ReplyToken: "rt", FromName: "n", FromMode: message.ModePrompting, ToSessionID: "s1", Priority: PriorityNow, Content: "hi"}}, nil},
		{"an unknown fromMode asserts nothing", user(`,"fromMode":"yolo"`),
			Line{User: &UserFrame{MsgID: "m-1", Content: "hi"}}, nil},
		{"an unknown priority reads as next", user(`,"priority":"later"`),
			Line{User: &UserFrame{MsgID: "m-1", Content: "hi"}}, nil},
		{"an empty toSessionId is a pin that matches nothing", user(`,"toSessionId":""`),
			Line{User: &UserFrame{MsgID: "m-1", Content: "hi", pinnedEmpty: true}}, nil},
		{"null fields read as absent", user(`,"from":null,"toSessionId":null,"fromMode":null`),
			Line{User: &UserFrame{MsgID: "m-1", Content: "hi"}}, nil},
		{"unknown fields are ignored", user(`,"hop":[1,2],"x":{"y":1}`),
			Line{User: &UserFrame{MsgID: "m-1", Content: "hi"}}, nil},
		{"msgV 0.5 and -1 read as current", `{"msgV":-1,"msgId":"a","type":"user","message":{"role":"user","content":"x"}}`,
			Line{User: &UserFrame{MsgID: "a", Content: "x"}}, nil},
		{"msgV 2 is dropped", `{"msgV":2,"msgId":"a","type":"user","message":{"role":"user","content":"x"}}`, Line{}, ErrVersion},
		{"msgV as a string is dropped", `{"msgV":"1","msgId":"a","type":"user","message":{"role":"user","content":"x"}}`, Line{}, ErrVersion},
		{"a huge negative msgV is -Infinity, still at or below 1", `{"msgV":-1e400,"type":"auth","token":"t"}`,
			Line{Auth: &Auth{Token: "t"}}, nil},
		{"a huge msgV is +Infinity, above 1", `{"msgV":1e400,"type":"auth","token":"t"}`, Line{}, ErrVersion},
		{"no msgV is dropped", `{"type":"auth","token":"t"}`, Line{}, ErrVersion},
		{"msgId all is reserved", `{"msgV":1,"msgId":"A-l-L","type":"user","message":{"role":"user","content":"x"}}`, Line{}, ErrBadMsgID},
		{"msgId must start with a letter or digit", `{"msgV":1,"msgId":"_a","type":"user","message":{"role":"user","content":"x"}}`, Line{}, ErrBadMsgID},
		{"an assistant message is dropped", `{"msgV":1,"msgId":"a","type":"user","message":{"role":"assistant","content":"x"}}`, Line{}, ErrBadRole},
		{"empty content is dropped", `{"msgV":1,"msgId":"a","type":"user","message":{"role":"user","content":""}}`, Line{}, ErrNoContent},
		{"a message that is a string is dropped", `{"msgV":1,"msgId":"a","type":"user","message":"x"}`, Line{}, ErrNoContent},
		{"a numeric from is refused where Qwen Code would drop the field", user(`,"from":5`), Line{}, ErrBadField},
		{"a numeric priority is refused where Qwen Code would read next", user(`,"priority":1`), Line{}, ErrBadField},
		{"a repeated key is refused", `{"msgV":1,"type":"auth","token":"a","token":"b"}`, Line{}, ErrDuplicateKey},
		{"a repeated key inside message is refused", `{"msgV":1,"msgId":"a","type":"user","message":{"role":"user","content":"x","content":"y"}}`, Line{}, ErrDuplicateKey},
		{"keys match case exactly", `{"MsgV":1,"type":"auth","token":"t"}`, Line{}, ErrVersion},
		{"text after the object is refused", `{"msgV":1,"type":"auth","token":"t"} x`, Line{}, ErrSyntax},
		{"an array is not an object", `[1]`, Line{}, ErrNotObject},
		{"broken JSON is refused", `{"msgV":1`, Line{}, ErrSyntax},
		{"nesting deeper than jsonx.MaxDepth is refused unparsed", `{"msgV":1,"x":` + strings.Repeat("[", 1<<16), Line{}, jsonx.ErrTooDeep},
		{"invalid UTF-8 is refused", "{\"msgV\":1,\"type\":\"auth\",\"token\":\"\xff\"}", Line{}, ErrInvalidUTF8},
		{"white space alone is a blank line", " \t\u00a0\ufeff", Line{}, ErrBlankLine},
		{"a type other than auth, user and control is dropped", `{"msgV":1,"msgId":"a","type":"ping"}`, Line{}, ErrUnknownType},
		{"a held receipt", `{"msgV":1,"msgId":"r1","type":"control","action":"delivery_status","status":"held","origMsgId":"m-1","from":"/s/2.sock","reason":"wait"}`,
			Line{Status: &StatusFrame{MsgID: "r1", Status: StatusHeld, OrigMsgID: "m-1", From: "/s/2.sock", Reason: "wait"}}, nil},
		{"a dropped receipt keeps its valid ids", `{"msgV":1,"msgId":"r1","type":"control","action":"delivery_status","status":"dropped","origMsgId":"m-1","dropReason":"duplicate","droppedMsgIds":["a",5,"all","","b-c",null]}`,
			Line{Status: &StatusFrame{MsgID: "r1", Status: StatusDropped, OrigMsgID: "m-1", DropReason: message.DropDuplicate, DroppedMsgIDs: []string{"a", "b-c"}}}, nil},
		{"an unknown dropReason reads as none", `{"msgV":1,"msgId":"r1","type":"control","action":"delivery_status","status":"dropped","origMsgId":"m-1","dropReason":"hop-loop"}`,
			Line{Status: &StatusFrame{MsgID: "r1", Status: StatusDropped, OrigMsgID: "m-1"}}, nil},
		{"drop fields on another status are ignored, whatever their type", `{"msgV":1,"msgId":"r1","type":"control","action":"delivery_status","status":"held","origMsgId":"m-1","dropReason":7,"droppedMsgIds":"x"}`,
			Line{Status: &StatusFrame{MsgID: "r1", Status: StatusHeld, OrigMsgID: "m-1"}}, nil},
		{"origMsgId need not follow the msgId grammar", `{"msgV":1,"msgId":"r1","type":"control","action":"delivery_status","status":"denied","origMsgId":"x y"}`,
			Line{Status: &StatusFrame{MsgID: "r1", Status: StatusDenied, OrigMsgID: "x y"}}, nil},
		{"an unknown status is no transition", `{"msgV":1,"msgId":"r1","type":"control","action":"delivery_status","status":"read","origMsgId":"m"}`, Line{}, ErrUnknownStatus},
		{"another action is dropped", `{"msgV":1,"msgId":"r1","type":"control","action":"peer_message_status","status":"held","origMsgId":"m"}`, Line{}, ErrUnknownAction},
		{"a receipt without origMsgId is dropped", `{"msgV":1,"msgId":"r1","type":"control","action":"delivery_status","status":"held"}`, Line{}, ErrNoOrigMsgID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLine([]byte(tt.line))
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", describeLine(got), describeLine(tt.want))
			}
		})
	}
}

func describeLine(l Line) any {
	switch {
	case l.Auth != nil:
		return *l.Auth
	case l.User != nil:
		return *l.User
	case l.Status != nil:
		return *l.Status
	}
	return "nothing"
}

func TestParseLineCapsDroppedIDs(t *testing.T) {
	ids := make([]string, 300)
	for i := range ids {
		ids[i] = `"id` + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + `"`
	}
	line := `{"msgV":1,"msgId":"r","type":"control","action":"delivery_status","status":"dropped","origMsgId":"o","droppedMsgIds":[` + strings.Join(ids, ",") + `]}`
	l, err := ParseLine([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(l.Status.DroppedMsgIDs); n != MaxDroppedMsgIDs {
		t.Fatalf("kept %d ids, want the first %d", n, MaxDroppedMsgIDs)
	}
}
