package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestABodyIsReadWholeWhateverItsDeclaredLength(t *testing.T) {
	body := `{"to":"x","body":"` + strings.Repeat("y", 5000) + `"}`
	tests := []struct {
		name     string
		declared int64 // the request's ContentLength
	}{
		{"declared exactly", int64(len(body))},
		{"declared shorter than it is", 10},
		{"not declared (chunked)", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body))
			r.ContentLength = tt.declared
			got, err := readBody(r)
			if err != nil || string(got) != body {
				t.Fatalf("readBody = %d bytes, %v; want the %d sent", len(got), err, len(body))
			}
		})
	}
}

func TestALongRoutesBodyReadOnceIsStillTheHandlers(t *testing.T) {
	body := `{"to":"x","body":"hi"}`
	var first, second string
	h := newTestServer().unbounded(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := readBody(r)
		if err != nil {
			t.Fatal(err)
		}
		first = string(b)
		rest, _ := io.ReadAll(r.Body)
		second = string(rest)
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body)))
	if first != body || second != "" {
		t.Fatalf("handler read %q then %q; want the body once, then nothing", first, second)
	}
	// A handler that reads the body itself gets it too.
	h = newTestServer().unbounded(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		first = string(b)
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body)))
	if first != body {
		t.Fatalf("a handler reading the body itself got %q", first)
	}
}
