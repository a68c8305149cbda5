package qwen

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/sessiongateway/gateway/message"
)

// The vectors in testdata/realjs_*.json were produced by @qwen-code/sdk
// 0.1.14's own exported functions (see testdata/gen_realjs.mjs and
// testdata/README.md); these tests hold our parser to them.

type jsFrame struct {
	Type          string  `json:"type"`
	MsgID         string  `json:"msgId"`
	From          *string `json:"from"`
	ReplyToken    *string `json:"replyToken"`
	FromName      *string `json:"fromName"`
	FromMode      *string `json:"fromMode"`
	ToSessionID   *string `json:"toSessionId"`
	Priority      string  `json:"priority"`
	Message       struct{ Content string }
	Status        string   `json:"status"`
	OrigMsgID     string   `json:"origMsgId"`
	Reason        *string  `json:"reason"`
	DropReason    *string  `json:"dropReason"`
	DroppedMsgIDs []string `json:"droppedMsgIds"`
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (f jsFrame) line() Line {
	if f.Type == "user" {
		u := UserFrame{MsgID: f.MsgID, From: deref(f.From), ReplyToken: Token(deref(f.ReplyToken)), FromName: deref(f.FromName),
			FromMode: wireMode(deref(f.FromMode)), ToSessionID: deref(f.ToSessionID), Content: f.Message.Content}
		u.pinnedEmpty = f.ToSessionID != nil && *f.ToSessionID == ""
		if f.Priority == "now" {
			u.Priority = PriorityNow
		}
		return Line{User: &u}
	}
	st, _ := ParseStatus(f.Status)
	s := StatusFrame{MsgID: f.MsgID, Status: st, OrigMsgID: f.OrigMsgID, From: deref(f.From), Reason: deref(f.Reason), DroppedMsgIDs: f.DroppedMsgIDs}
	s.DropReason, _ = ParseDropReason(deref(f.DropReason))
	return Line{Status: &s}
}

func TestParseLineMatchesQwenCode(t *testing.T) {
	b, err := os.ReadFile("testdata/realjs_frames.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct {
		Line  string   `json:"line"`
		Frame *jsFrame `json:"frame"`
		Auth  *string  `json:"auth"`
	}
	if err := json.Unmarshal(b, &vectors); err != nil {
		t.Fatal(err)
	}
	stricter := 0
	for _, v := range vectors {
		got, err := ParseLine([]byte(v.Line))
		if errors.Is(err, ErrDuplicateKey) || errors.Is(err, ErrBadField) {
			stricter++ // documented: refused where Qwen Code drops the field
			continue
		}
		switch {
		case v.Frame != nil:
			if want := v.Frame.line(); !reflect.DeepEqual(got, want) {
				t.Errorf("%s\n got %+v (%v)\nwant %+v", v.Line, describeLine(got), err, describeLine(want))
			}
		case v.Auth != nil:
			if got.Auth == nil || string(got.Auth.Token) != *v.Auth {
				t.Errorf("%s\n got %+v (%v), want auth %q", v.Line, describeLine(got), err, *v.Auth)
			}
		case err == nil:
			t.Errorf("%s\n Qwen Code drops it, we read %+v", v.Line, describeLine(got))
		}
	}
	if stricter > len(vectors)/2 {
		t.Fatalf("%d of %d lines refused only for our strictness: the vectors test little", stricter, len(vectors))
	}
	t.Logf("%d lines, %d refused by our stricter rules", len(vectors), stricter)
}

type textVectors struct {
	MsgIDs    [][3]any    `json:"msgIds"`
	Labels    [][2]string `json:"labels"`
	Refs      [][2]string `json:"refs"`
	Invisible [][2]rune   `json:"invisible"`
	Trimmed   [][2]rune   `json:"trimmed"`
}

func loadText(t *testing.T) textVectors {
	t.Helper()
	b, err := os.ReadFile("testdata/realjs_text.json")
	if err != nil {
		t.Fatal(err)
	}
	var v textVectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestTextMatchesQwenCode(t *testing.T) {
	v := loadText(t)
	t.Run("msgId validity and canonical form agree", func(t *testing.T) {
		for _, m := range v.MsgIDs {
			id, valid, canon := m[0].(string), m[1].(bool), m[2].(string)
			if ValidMsgID(id) != valid || CanonicalMsgID(id) != canon {
				t.Errorf("%q: valid %v canonical %q, Qwen Code %v %q", id, ValidMsgID(id), CanonicalMsgID(id), valid, canon)
			}
		}
	})
	t.Run("labels flatten the same", func(t *testing.T) {
		for _, l := range v.Labels {
			if got := FlattenLabel(l[0]); got != l[1] {
				t.Errorf("FlattenLabel(%q) = %q, Qwen Code %q", l[0], got, l[1])
			}
		}
	})
	t.Run("refs are the same", func(t *testing.T) {
		for _, r := range v.Refs {
			if got := Ref(r[0]); got != r[1] {
				t.Errorf("Ref(%q) = %q, want %q", r[0], got, r[1])
			}
		}
	})
	in := func(ranges [][2]rune, r rune) bool {
		for _, g := range ranges {
			if r >= g[0] && r <= g[1] {
				return true
			}
		}
		return false
	}
	t.Run("every code point is flattened and trimmed as Qwen Code does", func(t *testing.T) {
		bad := 0
		for r := rune(0); r <= 0x10FFFF; r++ {
			if r >= 0xD800 && r <= 0xDFFF || r == ' ' {
				continue
			}
			inv := in(v.Invisible, r)
			if isInvisible(r) != inv {
				bad++
				if bad < 20 {
					t.Errorf("U+%04X: invisible %v, Qwen Code %v", r, isInvisible(r), inv)
				}
			}
			if !inv && isJSSpace(r) != in(v.Trimmed, r) {
				t.Errorf("U+%04X: trimmed %v, Qwen Code %v", r, isJSSpace(r), in(v.Trimmed, r))
			}
		}
	})
}

func TestStatusMapsToTheModel(t *testing.T) {
	for s := StatusHeld; s <= StatusDropped; s++ {
		m := s.Model()
		if m == 0 || m.String() != s.String() {
			t.Errorf("%v maps to %v", s, m)
		}
		back, ok := WireStatusOf(m)
		if !ok || back != s {
			t.Errorf("%v does not map back: %v %v", m, back, ok)
		}
	}
	for _, m := range []message.Status{message.StatusQueued, message.StatusSent, message.StatusFailed} {
		if _, ok := WireStatusOf(m); ok {
			t.Errorf("%v has a wire status", m)
		}
	}
}
