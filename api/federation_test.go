package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

func TestFederationStatusIsServedToReadersAndSaysWhenOff(t *testing.T) {
	srv := newTestServer()
	srv.cfg.Tokens = testTokens
	h := srv.TCPHandler(testHost)
	if rec := tcpDo(h, "GET", "/v1/federation", "reader", ""); rec.Code != http.StatusOK || strings.Join(strings.Fields(rec.Body.String()), "") != `{"enabled":false}` {
		t.Fatalf("without federation: %d %s", rec.Code, rec.Body.String())
	}
	if rec := tcpDo(h, "GET", "/v1/federation", "", ""); rec.Code != http.StatusUnauthorized {
		t.Fatalf("without a token: %d", rec.Code)
	}
	srv.cfg.Federation = func(context.Context) any { return map[string]any{"enabled": true, "host": "a"} }
	if rec := tcpDo(h, "GET", "/v1/federation", "reader", ""); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"host":"a"`) {
		t.Fatalf("with federation: %d %s", rec.Code, rec.Body.String())
	}
}
