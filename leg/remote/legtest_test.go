package remote_test

import (
	"log/slog"
	"testing"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/demo/fakecloud"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/leg/remote"
	"github.com/sessiongateway/gateway/leg/remote/sessionsapi"
	"github.com/sessiongateway/gateway/leg/remote/stream"
)

// The remote leg keeps the Leg contract over each live transport, following
// one session of a fake claude.ai.
func TestRemoteLegKeepsTheLegContract(t *testing.T) {
	for _, transport := range []stream.Transport{stream.TransportWS, stream.TransportSSE} {
		t.Run(string(transport), func(t *testing.T) {
			legtest.Run(t, func(t *testing.T) legtest.Subject {
				const token, org = "tok-legtest-0123456789", "7b0c2f4e-1d2a-4c3b-9e8f-0a1b2c3d4e5f"
				cloud := fakecloud.Start(t, fakecloud.Options{Token: token, OrgUUID: org})
				sid := cloud.CreateSession("legtest")
				c, err := sessionsapi.New(sessionsapi.Options{BaseURL: cloud.URL(), OrgUUID: org, Token: auth.StaticToken(token)})
				if err != nil {
					t.Fatal(err)
				}
				l, err := remote.NewLeg(remote.LegConfig{API: remote.NewSessionsAPI(c, transport), BaseURL: cloud.URL(), OrgUUID: org,
					Transport: transport, Follow: []string{sid}, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				return legtest.Subject{Leg: l, Unknown: "bridge:session_01nobodyatall", Inbound: func(t *testing.T) {
					if _, err := cloud.StreamTurn(sid, fakecloud.Turn{Text: "hello"}); err != nil {
						t.Fatal(err)
					}
				}}
			})
		})
	}
}
