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
		{"another demo's echo is not answered", "demo-qwen got: hello", reply{}},
		{"another demo's note that it asked is not answered", "demo-qwen asked gateway: hi", reply{}},
		{"a body that merely starts with demo- is answered", "demo-day is today",
			reply{Answer: "demo-claude got: demo-day is today"}},
		{"a long body is echoed clipped", long, reply{Answer: "demo-claude got: " + long[:2*maxEcho] + "..."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := respond(ClaudeName, tt.body); got != tt.want {
				t.Errorf("respond(%q) = %+v, want %+v", tt.body, got, tt.want)
			}
		})
	}
}
