package qwen

import (
	"strings"
	"testing"
)

type verifierFunc func(string) (Controller, bool)

func TestAuthenticate(t *testing.T) {
	ctl := Controller{ID: "c_0a0b0c0d", Label: "voice"}
	a := Authenticator{IPCToken: "peer-tok", ChildToken: "child-tok", Controllers: []ControllerVerifier{
		verifierFunc(func(string) (Controller, bool) { return Controller{}, false }),
		verifierFunc(func(tok string) (Controller, bool) { return ctl, tok == "qpc_x" }),
	}}
	auth := func(tok string) string { return `{"msgV":1,"type":"auth","token":"` + tok + `"}` }
	tests := []struct {
		name string
		line string
		want Origin
		ok   bool
	}{
		{"our ipcToken is an ordinary peer", auth("peer-tok"), Origin{Kind: AuthPeer}, true},
		{"the child token is our own process", auth("child-tok"), Origin{Kind: AuthChild}, true},
		{"a controller grant is a controller, with its label", auth("qpc_x"), Origin{Kind: AuthController, Controller: ctl}, true},
		{"a wrong token closes the connection", auth("peer-toK"), Origin{}, false},
		{"a prefix of the token closes the connection", auth("peer"), Origin{}, false},
		{"a user frame first closes the connection", `{"msgV":1,"msgId":"a","type":"user","message":{"role":"user","content":"x"}}`, Origin{}, false},
		{"a newer msgV closes the connection", `{"msgV":2,"type":"auth","token":"peer-tok"}`, Origin{}, false},
		{"junk closes the connection", `peer-tok`, Origin{}, false},
		{"a right token on a line over MaxAuthLine closes the connection unparsed",
			`{"msgV":1,"type":"auth","token":"peer-tok"` + strings.Repeat(" ", MaxAuthLine) + `}`, Origin{}, false},
		{"a right token on a line of MaxAuthLine is accepted",
			`{"msgV":1,"type":"auth","token":"peer-tok"` + strings.Repeat(" ", MaxAuthLine-len(auth("peer-tok"))) + `}`, Origin{Kind: AuthPeer}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := a.Authenticate([]byte(tt.line))
			if ok != tt.ok || got != tt.want {
				t.Fatalf("got %+v %v", got, ok)
			}
		})
	}
	t.Run("an inbox without tokens accepts no auth line", func(t *testing.T) {
		if _, ok := (Authenticator{}).Authenticate([]byte(auth(""))); ok {
			t.Fatal("accepted")
		}
	})
}

func (f verifierFunc) Verify(tok string) (Controller, bool) { return f(tok) }
