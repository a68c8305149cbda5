package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sessiongateway/gateway/addressing"
)

func TestErrorsMapToTheirStatusCodes(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		code   string
		status int
	}{
		{"a deadline is a 504 timeout", fmt.Errorf("resolving: %w", context.DeadlineExceeded), CodeTimeout, http.StatusGatewayTimeout},
		{"a did: address with no resolver is a 404", fmt.Errorf("did:example:x: %w", addressing.ErrNoDIDResolver), CodeNotFound, http.StatusNotFound},
		{"a pipe address off Windows is a 400", fmt.Errorf(`\\.\pipe\x: %w`, addressing.ErrUnsupported), CodeBadAddress, http.StatusBadRequest},
		{"anything else is a 500 internal", fmt.Errorf("boom"), CodeInternal, http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			e := errorOf(tt.err)
			writeError(rec, e)
			if e.Code != tt.code || rec.Code != tt.status {
				t.Fatalf("%v: %s %d, want %s %d", tt.err, e.Code, rec.Code, tt.code, tt.status)
			}
		})
	}
}
