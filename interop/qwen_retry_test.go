package interop

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/testkit/fakeopenai"
)

// failedSends is what decides to retype a trigger: it must count each
// send_message call whose result did not send once, however many requests
// repeat that conversation, and ignore calls that sent.
func TestFailedSendsCountsEachUnsentCallOnce(t *testing.T) {
	const notFound = `No active team, no task_id, and no reachable session named \"gateway-it\". Create a team, pass task_id to message a background task, or use list_agents to see which sessions are reachable.`
	const sent = `Sent to gateway-it \u2014 another Qwen Code session on this machine, working in /tmp.`
	call := func(id, result string) string {
		return `{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"send_message","arguments":"{\"to\":\"gateway-it\",\"message\":\"hi\"}"}}]},` +
			`{"role":"tool","tool_call_id":"` + id + `","content":[{"type":"text","text":"` + result + `"}]}`
	}
	tests := []struct {
		name   string
		bodies []string
		want   int
	}{
		{"a call that sent is not a failure", []string{call("c1", sent)}, 0},
		{"a call answered not found is one failure", []string{call("c1", notFound)}, 1},
		{"the same call repeated in a later request counts once", []string{call("c1", notFound), call("c1", notFound) + `,{"role":"user","content":"again"}`}, 1},
		{"a retry that sent leaves the one earlier failure", []string{call("c1", notFound) + `,{"role":"user","content":"again"},` + call("c2", sent)}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := fakeopenai.Start(t, fakeopenai.Always(fakeopenai.Text("ok")))
			for _, msgs := range tt.bodies {
				body := `{"model":"fake-model","messages":[{"role":"user","content":"go"},` + msgs + `]}`
				resp, err := http.Post(model.BaseURL()+"/chat/completions", "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("fake answered %d to %s", resp.StatusCode, body)
				}
			}
			if got := failedSends(model); len(got) != tt.want {
				t.Fatalf("failedSends = %q, want %d", got, tt.want)
			}
		})
	}
}
