package answerfmt

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

func TestParseReply(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    Reply
		problem ReplyProblem // 0: parsed
		notOne  bool         // ErrNotAReply
	}{
		{"a plain allow", "allow p1a2b3c", Reply{Verb: VerbAllow, ID: "p1a2b3c"}, 0, false},
		{"a verb in any case with a colon, an id in brackets", "ALLOW: <P1A2B3C>", Reply{Verb: VerbAllow, ID: "p1a2b3c"}, 0, false},
		{"a line in backticks after blank lines", "\n\n  `/deny p1 no`  \nmore", Reply{Verb: VerbDeny, ID: "p1", Reason: "no"}, 0, false},
		{"a deny reason keeps its inner quotes", `deny p1 "no" means "no"`, Reply{Verb: VerbDeny, ID: "p1", Reason: `"no" means "no"`}, 0, false},
		{"a deny reason loses quotes around all of it", `deny p1 " 'not now' "`, Reply{Verb: VerbDeny, ID: "p1", Reason: "not now"}, 0, false},
		{"answer specs split like shell words", `answer p1 "Which one?=Option \"B\"" 'a\b' c\ d “e f”`,
			Reply{Verb: VerbAnswer, ID: "p1", Specs: []string{`Which one?=Option "B"`, `a\b`, "c d", "e f"}}, 0, false},
		{"a JSON list keeps its quotes and spaces", `answer p1 Features=["A", "B ]"] 1=2`,
			Reply{Verb: VerbAnswer, ID: "p1", Specs: []string{`Features=["A", "B ]"]`, "1=2"}}, 0, false},
		{"only the first line counts", "answer p1 1=1\n2=2", Reply{Verb: VerbAnswer, ID: "p1", Specs: []string{"1=1"}}, 0, false},
		{"a verb inside a word is no verb", "allowed p1", Reply{}, 0, true},
		{"a verb after other words is no reply", "ok, allow p1", Reply{}, 0, true},
		{"an empty body is no reply", " \n\t", Reply{}, 0, true},
		{"a verb alone has no id", "deny", Reply{}, ReplyNoID, false},
		{"an id with odd characters is refused", "allow p1/../x", Reply{}, ReplyBadID, false},
		{"an overlong id is refused", "allow p" + strings.Repeat("a", 64), Reply{}, ReplyBadID, false},
		{"allow takes options, not other words", "allow p1 please", Reply{}, ReplyExtraWords, false},
		{"allow takes gateway allow's options", `allow p1 --suggestion 2 --mode=acceptEdits --rule "Bash(npm test)" --input {"command": "npm test -- --watch=false"}`,
			Reply{Verb: VerbAllow, ID: "p1", Allow: AllowOptions{Suggestions: []string{"2"}, Mode: "acceptEdits", Rules: []string{"Bash(npm test)"}, Input: `{"command": "npm test -- --watch=false"}`}}, 0, false},
		{"an option allow does not take", "allow p1 --force", Reply{}, ReplyBadOption, false},
		{"an option without its value", "allow p1 --mode", Reply{}, ReplyBadOption, false},
		{"an unclosed object", `allow p1 --input {"a":1`, Reply{}, ReplyUnclosed, false},
		{"answer needs a spec", "answer p1  ", Reply{}, ReplyNoAnswers, false},
		{"an unclosed single quote", "answer p1 'x", Reply{}, ReplyUnclosed, false},
		{"an unclosed list", "answer p1 Q=[\"A\"", Reply{}, ReplyUnclosed, false},
		{"an unclosed quote in the id", `allow "p1`, Reply{}, ReplyUnclosed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseReply(tt.body)
			var re *ReplyError
			switch {
			case tt.notOne:
				if !errors.Is(err, ErrNotAReply) {
					t.Fatalf("got %+v, %v; want not a reply", got, err)
				}
			case tt.problem != 0:
				if !errors.As(err, &re) || re.Problem != tt.problem {
					t.Fatalf("got %+v, %v; want the problem %s", got, err, tt.problem)
				}
			case err != nil:
				t.Fatal(err)
			case !reflect.DeepEqual(got, tt.want):
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

// FuzzParseReply: a reply ParseReply accepts is well formed, and printed
// with String it reads back the same.
func FuzzParseReply(f *testing.F) {
	for _, s := range []string{
		"allow p1a2b3c", "/Allow <P1A2B3C>.", "`deny p1 'too risky'`", `deny p1 "a" and "b"`,
		`answer p1 "Approach=Option B" Features=["Logging","Metrics"]`, `answer p1 'a\b' c\ d “e f” "x\"y\\"`,
		"```\nanswer p1 1=1 2=2\n```", "allow", "answer p1 [", "deny p1 \"'x'\"", "allow p1 \x00", "answer p1 \"\"",
		`allow p1 --suggestion 1 --mode=plan --rule 'Bash(x y)' --input {"a": "}"}`, `allow p1 --input={"b":[1,{"c":"d"}]} --rule-destination session`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseReply(s)
		if err != nil {
			return
		}
		if !validReplyID(r.ID) || (r.Verb == VerbAnswer) != (len(r.Specs) > 0) ||
			(r.Verb != VerbDeny && r.Reason != "") || strings.Contains(r.Reason, "\n") ||
			(r.Verb != VerbAllow && !reflect.DeepEqual(r.Allow, AllowOptions{})) {
			t.Fatalf("%q gave the malformed %#v", s, r)
		}
		again, err := ParseReply(r.String())
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("%q: %#v printed as %q reads back as %#v, %v", s, r, r.String(), again, err)
		}
	})
}

// FuzzAnswerReply: the answers an `answer` reply gives, once ParseAnswers
// takes them, are ones the broker accepts: the approver never sends the
// leg an answer the prompt cannot take.
func FuzzAnswerReply(f *testing.F) {
	for _, s := range []string{
		`"Approach=Option B" "Features=Logging" "Features=Metrics"`, `1=2 Features=["Logging","Metrics"]`,
		`'which approach?=option a' 2=2`, `Approach=1 Approach=2 2=1`, `1=1 2=[]`, `1=1 2=["Logging","Logging"]`,
	} {
		f.Add(s)
	}
	req := *legtest.AskPrompt("r1").Permission
	f.Fuzz(func(t *testing.T, s string) {
		rep, err := ParseReply("answer p1 " + s)
		if err != nil {
			return
		}
		answers, err := ParseAnswers(req.Questions, rep.Specs)
		if err != nil {
			return
		}
		if err := router.ValidateAnswer(req, message.PermissionAnswer{Behavior: message.BehaviorAllow, Answers: answers}); err != nil {
			t.Fatalf("%q gave %v, which the broker refuses: %v", s, answers, err)
		}
	})
}
