package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeProbeTarget serves handler on <stateDir>/gateway.sock, where the health
// command looks, so unhealthy answers can be scripted.
func fakeProbeTarget(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	sd := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(sd, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(sd, "gateway.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: handler}}
	srv.Start()
	t.Cleanup(srv.Close)
	return sd
}

func answer(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}
}

func TestHealthAgainstScriptedAnswers(t *testing.T) {
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		args     []string
		wantCode int
		wantOut  string // in stdout
		wantErr  string // in stderr
	}{
		{"a 200 from healthz is healthy and prints the answer", answer(200, `{"status": "ok"}`),
			nil, exitOK, `{"status":"ok"}`, ""},
		{"a 500 from healthz is unhealthy and says what came back", answer(500, `{"error":"boom"}`),
			nil, exitError, "", `/healthz answered 500 Internal Server Error: {"error":"boom"}`},
		{"a 503 from readyz names the leg that is not ready", answer(503, `{"ready":false,"legs":{"remote":"401 from the server"}}`),
			[]string{"--ready"}, exitError, "", `"remote":"401 from the server"`},
		{"an answer that is not JSON is quoted, not printed raw", answer(502, "bad\ngateway"),
			nil, exitError, "", `"bad\ngateway"`},
		{"a stray argument is a usage error", answer(200, `{}`),
			[]string{"extra"}, exitUsage, "", "usage: gateway health"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sd := fakeProbeTarget(t, tt.handler)
			out, errOut, code := runCLI(t, sd, append([]string{"health"}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("stdout %q, want it to contain %q", out, tt.wantOut)
			}
			if !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tt.wantErr)
			}
		})
	}
}

func TestHealthOverTCP(t *testing.T) {
	srv := httptest.NewServer(answer(200, `{"status":"ok"}`))
	t.Cleanup(srv.Close)
	// The state directory holds no socket: only the URL can answer.
	out, errOut, code := runCLI(t, filepath.Join(t.TempDir(), "state"), "health", "--url", srv.URL+"/")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, `"status":"ok"`) {
		t.Errorf("stdout %q, want the healthz answer", out)
	}
}

func TestHealthWithNoGateway(t *testing.T) {
	sd := filepath.Join(t.TempDir(), "state")
	_, errOut, code := runCLI(t, sd, "health", "--timeout", "2s")
	if code != exitError {
		t.Fatalf("exit %d, want %d", code, exitError)
	}
	if !strings.Contains(errOut, "gateway not reachable") {
		t.Errorf("stderr %q, want it to say the gateway is not reachable", errOut)
	}
}

func TestHealthAgainstARunningGateway(t *testing.T) {
	root := t.TempDir()
	g := startBinary(t, root)

	t.Run("the control socket answers healthz without a token", func(t *testing.T) {
		out, errOut, code := runCLI(t, g.StateDir, "health")
		if code != exitOK {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		if !strings.Contains(out, `"status":"ok"`) {
			t.Errorf("stdout %q, want the healthz answer", out)
		}
	})
	t.Run("the local legs are ready", func(t *testing.T) {
		out, errOut, code := runCLI(t, g.StateDir, "health", "--ready")
		if code != exitOK {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		if !strings.Contains(out, `"ready":true`) {
			t.Errorf("stdout %q, want ready", out)
		}
	})
	t.Run("a stopped gateway is unhealthy", func(t *testing.T) {
		g.Stop(t)
		_, _, code := runCLI(t, g.StateDir, "health", "--timeout", "2s")
		if code != exitError {
			t.Fatalf("exit %d after stop, want %d", code, exitError)
		}
	})
}
