package api

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func TestASendTheGatewayWillNotCarryIsA4xxNamingTheField(t *testing.T) {
	h := newTestServer().Handler()
	tests := []struct {
		name, body string
		status     int
		code, says string
	}{
		{"a text at the cap is sent", `{"to":"review","body":"` + strings.Repeat("a", MaxText) + `"}`, 201, "", ""},
		{"a text over the cap is 413 too_large, naming body and the cap", `{"to":"review","body":"` + strings.Repeat("a", MaxText+1) + `"}`, 413, CodeTooLarge, `"body" is 524289 bytes, over the cap of 524288`},
		{"a deprecated text over the cap is 413 too", `{"to":"review","text":"` + strings.Repeat("a", MaxText+1) + `"}`, 413, CodeTooLarge, `"body"`},
		{"an empty body says body is required", `{"to":"review","body":""}`, 400, CodeBadRequest, `"body" is required`},
		{"a missing to says to is required", `{"body":"hi"}`, 400, CodeBadRequest, `"to" is required`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/messages", strings.NewReader(tt.body)))
			if rec.Code != tt.status {
				t.Fatalf("%d, want %d: %.200s", rec.Code, tt.status, rec.Body.String())
			}
			if tt.status < 400 {
				return
			}
			var e Error
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code != tt.code || !strings.Contains(e.Error, tt.says) {
				t.Fatalf("body %s (%v), want code %s saying %s", rec.Body.String(), err, tt.code, tt.says)
			}
		})
	}
}

func TestTheOpenAPIDocumentStatesTheTextCap(t *testing.T) {
	if d := fieldDocs["SendBody.body"]; !strings.Contains(d, strconv.Itoa(MaxText)) || !strings.Contains(d, "413") {
		t.Fatalf("SendBody.body is documented as %q, want the cap %d and its 413", d, MaxText)
	}
}
