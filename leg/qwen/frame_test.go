package qwen

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/message"
)

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
		if f := NewDropFrame("m", "/me", message.DropQueueFull, ids); len(f.DroppedMsgIDs) != MaxDroppedMsgIDs {
			t.Fatalf("kept %d", len(f.DroppedMsgIDs))
		}
		b, err := NewDropFrame("m", "/me", message.DropRateLimited, nil).Marshal()
		if err != nil || strings.Contains(string(b), "droppedMsgIds") || !strings.Contains(string(b), `"dropReason":"rate-limited"`) {
			t.Fatalf("got %s, %v", b, err)
		}
	})
	t.Run("drop fields are not written on another status", func(t *testing.T) {
		f := StatusFrame{MsgID: "r", Status: StatusHeld, OrigMsgID: "o", DropReason: message.DropDuplicate, DroppedMsgIDs: []string{"a"}}
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

func TestAnAuthLineIsWhatTheEncoderWrites(t *testing.T) {
	for _, tok := range []Token{NewIPCToken(), "0123456789abcdef", "ab", `a"b`, "a\\b", "<x>&", "ÿ", "A1"} {
		got, err := Auth{Token: tok}.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		want, err := Auth{Token: tok}.encode()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("token %q: %s, the encoder %s (%v)", tok, got, want, err)
		}
	}
}
