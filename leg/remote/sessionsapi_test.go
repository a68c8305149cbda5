package remote

import (
	"fmt"
	"io"
	"testing"

	"github.com/sessiongateway/gateway/leg/remote/sessionsapi"
)

func TestRemoteRefusalsAreThePermanentOnes(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"a session the server does not know", &sessionsapi.APIError{Op: "PostEvents", Status: 404}, true},
		{"refused credentials", fmt.Errorf("remote leg: %w", &sessionsapi.APIError{Status: 401}), true},
		{"a forbidden organisation", &sessionsapi.APIError{Status: 403}, true},
		{"an invalid event", &sessionsapi.APIError{Status: 422}, true},
		{"a server error", &sessionsapi.APIError{Status: 503}, false},
		{"rate limiting", &sessionsapi.APIError{Status: 429}, false},
		{"a dropped connection", fmt.Errorf("sessionsapi: PostEvents: %w", io.ErrUnexpectedEOF), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsRefusal(tt.err); got != tt.want {
				t.Fatalf("IsRefusal(%v) = %v", tt.err, got)
			}
		})
	}
}
