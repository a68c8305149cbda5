package demo

import (
	"strings"
	"testing"
)

func TestADemoAnswersWhatItIsSentAndNeverAnotherDemosAnswer(t *testing.T) {
	long := strings.Repeat("é", maxEcho+50)
	tests := []struct {
		name string
		body string
		want reply
	}{
		{"a message is echoed back with the demo's name", "hello", reply{Answer: "demo-claude got: hello"}},
		{"ask passes the text on to the name and says so", "ask demo-qwen how are you",
			reply{Answer: "demo-claude asked demo-qwen: how are you", ToName: "demo-qwen", Text: "how are you"}},
		{"ask without text is echoed with how to use it", "ask demo-qwen",
			reply{Answer: "demo-claude got: ask demo-qwen (try: ask NAME TEXT)"}},
		{"an ask of an ask is not passed on", "ask demo-qwen ask demo-claude hi",
			reply{Answer: "demo-claude got: ask demo-qwen ask demo-claude hi (a demo passes on no ask)"}},
		{"another demo's echo is not answered", "demo-qwen got: hello", reply{}},
		{"another demo's note that it asked is not answered", "demo-qwen asked gateway: hi", reply{}},
		{"a body that merely starts with demo- is answered", "demo-day is today",
			reply{Answer: "demo-claude got: demo-day is today"}},
		{"a long body is echoed clipped", long, reply{Answer: "demo-claude got: " + long[:2*maxEcho] + "…"}},
		{"ask to a name longer than any echo is answered with how to use it", "ask " + long + " hi",
			reply{Answer: "demo-claude got: ask " + long[:2*(maxEcho-4)] + "… (try: ask NAME TEXT)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := respond(ClaudeName, tt.body); got != tt.want {
				t.Errorf("respond(%q) = %+v, want %+v", tt.body, got, tt.want)
			}
		})
	}
}

// FuzzRespond: whatever a demo is sent, what it answers is bounded and is
// itself an answer (so two demos never answer each other for ever), and
// what it passes on is bounded and no ask.
func FuzzRespond(f *testing.F) {
	for _, s := range []string{"hello", "ask demo-qwen hi", "ask  x", "ask demo-qwen ask demo-claude ask x y",
		"demo-qwen got: hi", "demo- got: ", "ask " + strings.Repeat("x ", 300), "\x00ask\tdemo",
		"ask " + strings.Repeat("n", 4*maxEcho) + " hi"} { // a name longer than any echo

		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := respond(QwenName, body)
		if r.Answer != "" && (!isAnswer(r.Answer) || len(r.Answer) > 6*maxEcho+100) {
			t.Fatalf("respond(%q) answers %q: not recognised as an answer, or unbounded", body, r.Answer)
		}
		if r.ToName != "" && (len(r.Text) > 4*maxEcho+3 || strings.HasPrefix(r.Text, "ask ") || r.Text == "") {
			t.Fatalf("respond(%q) passes on %q", body, r.Text)
		}
		if isAnswer(body) && r != (reply{}) {
			t.Fatalf("respond answered an answer: %q -> %+v", body, r)
		}
	})
}
