package qwen

import (
	"errors"
	"reflect"
	"strings"
	"testing"

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
		{"invalid UTF-8 is refused", "{\"msgV\":1,\"type\":\"auth\",\"token\":\"\xff\"}", Line{}, ErrInvalidUTF8},
		{"white space alone is a blank line", " \t\u00a0\ufeff", Line{}, ErrBlankLine},
		{"a type other than auth, user and control is dropped", `{"msgV":1,"msgId":"a","type":"ping"}`, Line{}, ErrUnknownType},
		{"a held receipt", `{"msgV":1,"msgId":"r1","type":"control","action":"delivery_status","status":"held","origMsgId":"m-1","from":"/s/2.sock","reason":"wait"}`,
			Line{Status: &StatusFrame{MsgID: "r1", Status: StatusHeld, OrigMsgID: "m-1", From: "/s/2.sock", Reason: "wait"}}, nil},
		{"a dropped receipt keeps its valid ids", `{"msgV":1,"msgId":"r1","type":"control","action":"delivery_status","status":"dropped","origMsgId":"m-1","dropReason":"duplicate","droppedMsgIds":["a",5,"all","","b-c",null]}`,
			Line{Status: &StatusFrame{MsgID: "r1", Status: StatusDropped, OrigMsgID: "m-1", DropReason: DropDuplicate, DroppedMsgIDs: []string{"a", "b-c"}}}, nil},
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

func TestMsgIDGrammar(t *testing.T) {
	tests := []struct {
		id    string
		valid bool
	}{
		{"5f1d0c9e-3b2a-4e8f-9c7d-1a2b3c4d5e6f", true},
		{"a", true}, {"A_b-C", true}, {strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false}, {"", false}, {"_a", false}, {"-a", false},
		{"all", false}, {"ALL", false}, {"a-l-l", false}, {"all_", true}, {"a b", false}, {"é", false},
	}
	for _, tt := range tests {
		name := "the id " + tt.id + " is refused"
		if tt.valid {
			name = "the id " + tt.id + " is accepted"
		}
		t.Run(name, func(t *testing.T) {
			if got := ValidMsgID(tt.id); got != tt.valid {
				t.Fatalf("ValidMsgID(%q) = %v", tt.id, got)
			}
		})
	}
	t.Run("canonical ids drop dashes and case", func(t *testing.T) {
		if got := CanonicalMsgID("Ab-C-d"); got != "abcd" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("fresh ids are valid and distinct", func(t *testing.T) {
		a, b := NewMsgID(), NewMsgID()
		if !ValidMsgID(a) || a == b {
			t.Fatalf("NewMsgID gave %q and %q", a, b)
		}
	})
}

func TestBuildersAndPayload(t *testing.T) {
	self := Sender{IPCPath: "/run/user/1/qwen-socks/9.sock", IPCToken: "aa", Name: "gw", Mode: message.ModeBypass}
	rec := Record{SessionID: "s-1"}

	t.Run("a user frame is pinned to the record's session and names us", func(t *testing.T) {
		f := NewUserFrame(self, rec, "hello")
		want := UserFrame{MsgID: f.MsgID, From: self.IPCPath, ReplyToken: "aa", FromName: "gw", FromMode: message.ModeBypass, ToSessionID: "s-1", Content: "hello"}
		if !reflect.DeepEqual(f, want) || !ValidMsgID(f.MsgID) {
			t.Fatalf("got %+v", f)
		}
	})
	t.Run("the payload is the auth line then the frame, each ending in a newline", func(t *testing.T) {
		f := UserFrame{MsgID: "m1", From: "/a", FromMode: message.ModePrompting, ToSessionID: "s", Content: "<b>&"}
		got, err := Payload("tok", f)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"msgV":1,"type":"auth","token":"tok"}` + "\n" +
			`{"msgV":1,"msgId":"m1","type":"user","from":"/a","fromMode":"prompting","toSessionId":"s","priority":"next","message":{"role":"user","content":"<b>&"}}` + "\n"
		if string(got) != want {
			t.Fatalf("got\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("without a token there is no auth line", func(t *testing.T) {
		got, err := Payload("", UserFrame{MsgID: "m1", Content: "x"})
		if err != nil || strings.Count(string(got), "\n") != 1 || strings.Contains(string(got), "auth") {
			t.Fatalf("got %q, %v", got, err)
		}
	})
	t.Run("a frame over 1 MiB of UTF-16 units is refused before sending", func(t *testing.T) {
		// 400k code points above U+FFFF are 800k units: with the envelope,
		// under the cap; 600k are 1.2M units: over it, though its bytes
		// would have passed a byte count of 2.4M either way.
		small := UserFrame{MsgID: "m", Content: strings.Repeat("😀", 400_000)}
		if _, err := Payload("", small); err != nil {
			t.Fatalf("800k units refused: %v", err)
		}
		big := UserFrame{MsgID: "m", Content: strings.Repeat("😀", 600_000)}
		if _, err := Payload("", big); !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("1.2M units: err = %v", err)
		}
	})
	t.Run("an invalid frame is not marshalled", func(t *testing.T) {
		for _, f := range []Frame{UserFrame{MsgID: "all", Content: "x"}, UserFrame{MsgID: "m"}, StatusFrame{MsgID: "m", Status: StatusHeld}, Auth{}} {
			if _, err := Payload("", f); err == nil {
				t.Errorf("%#v marshalled", f)
			}
		}
	})
	t.Run("a status frame carries our reason and a fresh id", func(t *testing.T) {
		f := NewStatusFrame(StatusRefused, "m1", "/me.sock")
		if f.Reason == "" || !ValidMsgID(f.MsgID) || f.OrigMsgID != "m1" || f.From != "/me.sock" {
			t.Fatalf("got %+v", f)
		}
	})
	t.Run("a drop frame keeps at most 256 further ids and leaves an empty list out", func(t *testing.T) {
		ids := make([]string, 300)
		for i := range ids {
			ids[i] = "i" + strings.Repeat("d", i%7)
		}
		if f := NewDropFrame("m", "/me", DropQueueFull, ids); len(f.DroppedMsgIDs) != MaxDroppedMsgIDs {
			t.Fatalf("kept %d", len(f.DroppedMsgIDs))
		}
		b, err := NewDropFrame("m", "/me", DropRateLimited, nil).Marshal()
		if err != nil || strings.Contains(string(b), "droppedMsgIds") || !strings.Contains(string(b), `"dropReason":"rate-limited"`) {
			t.Fatalf("got %s, %v", b, err)
		}
	})
	t.Run("drop fields are not written on another status", func(t *testing.T) {
		f := StatusFrame{MsgID: "r", Status: StatusHeld, OrigMsgID: "o", DropReason: DropDuplicate, DroppedMsgIDs: []string{"a"}}
		b, err := f.Marshal()
		if err != nil || strings.Contains(string(b), "drop") {
			t.Fatalf("got %s, %v", b, err)
		}
	})
	t.Run("Settles lists the dropped ids only on a dropped receipt", func(t *testing.T) {
		d := StatusFrame{Status: StatusDropped, OrigMsgID: "o", DroppedMsgIDs: []string{"a", "b"}}
		h := StatusFrame{Status: StatusHeld, OrigMsgID: "o", DroppedMsgIDs: []string{"a"}}
		if !reflect.DeepEqual(d.Settles(), []string{"o", "a", "b"}) || !reflect.DeepEqual(h.Settles(), []string{"o"}) {
			t.Fatalf("got %v and %v", d.Settles(), h.Settles())
		}
	})
}

func TestWireTables(t *testing.T) {
	t.Run("every status round-trips through its wire spelling", func(t *testing.T) {
		for s := StatusHeld; s <= StatusDropped; s++ {
			got, err := ParseStatus(s.String())
			if err != nil || got != s {
				t.Errorf("%v: %v %v", s, got, err)
			}
		}
	})
	t.Run("every drop reason round-trips through its wire spelling", func(t *testing.T) {
		for r := DropRateLimited; r <= DropQueueFull; r++ {
			got, err := ParseDropReason(r.String())
			if err != nil || got != r {
				t.Errorf("%v: %v %v", r, got, err)
			}
		}
		if _, err := ParseDropReason("hop-loop"); err == nil {
			t.Error("hop-loop parsed")
		}
	})
	t.Run("every other named value has its own spelling", func(t *testing.T) {
		got := []string{
			LineAuth.String(), LineUser.String(), LineControl.String(),
			AuthPeer.String(), AuthChild.String(), AuthController.String(),
			PolicyUnset.String(), PolicyAccept.String(), PolicyHold.String(), PolicyRefuse.String(),
			CauseExplicitSetting.String(), CauseModeMismatch.String(), CauseNoModeAsserted.String(), CauseModeUnknown.String(), CausePolicyUnreadable.String(),
			OutcomeDelivered.String(), OutcomeHeld.String(), OutcomeDropped.String(), OutcomeRefused.String(), OutcomeRepeated.String(), OutcomeMisaddressed.String(), OutcomeExpired.String(),
			VerdictLive.String(), VerdictDead.String(), VerdictMisnamed.String(), VerdictForeign.String(),
			ReachAlive.String(), ReachDead.String(), ReachUnknown.String(),
			DecideDone.String(), DecideGone.String(), DecideFailed.String(),
		}
		want := []string{"auth", "user", "control", "peer", "own-process", "controller", "unset", "accept", "hold", "refuse",
			"explicit-setting", "mode-mismatch", "no-mode-asserted", "mode-unknown", "policy-unreadable",
			"delivered", "held", "dropped", "refused", "repeated", "misaddressed", "expired",
			"live", "dead", "misnamed", "foreign", "alive", "dead", "unknown", "done", "gone", "failed"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("out-of-range values print as numbers, not as a neighbour", func(t *testing.T) {
		if Status(0).String() != "status(0)" || Status(99).String() != "status(99)" || DropReason(0).String() != "drop(0)" {
			t.Fatalf("got %s %s %s", Status(0), Status(99), DropReason(0))
		}
		if PriorityNext.String() != "next" || Priority(7).String() != "priority(7)" {
			t.Fatalf("got %s %s", PriorityNext, Priority(7))
		}
	})
}

func TestTokensDoNotPrint(t *testing.T) {
	tok := Token("secret-value")
	for _, s := range []string{tok.String(), tok.GoString(), tok.LogValue().String()} {
		if strings.Contains(s, "secret") {
			t.Fatalf("token printed as %q", s)
		}
	}
	if !tok.Equal("secret-value") || tok.Equal("secret-valuf") || tok.Equal("secret") {
		t.Fatal("Equal is wrong")
	}
	if a, b := NewIPCToken(), NewChildToken(); !isHexToken(string(a), 64) || !isHexToken(string(b), 64) || a == b {
		t.Fatal("minted tokens are not 64 distinct hex characters")
	}
	env := ChildEnv("/s.sock", "c")
	if !reflect.DeepEqual(env, []string{"QWEN_CODE_MESSAGING_SOCKET=/s.sock", "QWEN_CODE_MESSAGING_TOKEN=c"}) {
		t.Fatalf("ChildEnv = %v", env)
	}
}
