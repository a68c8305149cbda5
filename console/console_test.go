package console

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/skip2/go-qrcode"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/router"
)

func serve(t *testing.T, path string) *httptest.ResponseRecorder {
	t.Helper()
	srv := api.NewServer(api.Config{Router: router.New(router.Config{}), Token: "tok", Console: Handler()})
	req := httptest.NewRequest("GET", path, nil)
	req.Host = "127.0.0.1:7777"
	rec := httptest.NewRecorder()
	srv.TCPHandler("127.0.0.1:7777").ServeHTTP(rec, req)
	return rec
}

func TestTheConsoleIsServedWithoutATokenUnderAStrictCSP(t *testing.T) {
	for _, path := range []string{"/", "/console/app.js", "/console/api.js", "/console/prompts.js", "/console/dom.js", "/console/markdown.js", "/console/sessions.js", "/console/start.js", "/console/style.css"} {
		rec := serve(t, path)
		if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
			t.Fatalf("GET %s: %d", path, rec.Code)
		}
		csp := rec.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'none'") ||
			strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Fatalf("GET %s: CSP %q", path, csp)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", path)
		}
	}
	if ct := serve(t, "/console/app.js").Header().Get("Content-Type"); !strings.Contains(ct, "javascript") {
		t.Errorf("a module served as %q", ct)
	}
	for _, path := range []string{"/console/", "/console/assets/app.js", "/console/nope.js"} {
		if rec := serve(t, path); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, rec.Code)
		}
	}
	if rec := serve(t, "/v1/sessions"); rec.Code != http.StatusUnauthorized {
		t.Errorf("the API beside the console still needs a token: %d", rec.Code)
	}
}

// The CSP is the enforcement; this keeps the assets within it, so no view
// breaks in a browser: no inline script or handler, nothing from another origin.
func TestTheAssetsNeedNothingTheCSPForbids(t *testing.T) {
	inline := regexp.MustCompile(`(?i)<script(?:[^>]*)>[^<]+</script>|\son[a-z]+\s*=|javascript:|<style|\sstyle\s*=`)
	foreign := regexp.MustCompile(`(?i)(?:src|href)\s*=\s*"(?:https?:)?//|url\((?:https?:)?//|import\s[^;]*from\s+"(?:https?:)?//`)
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := assets.ReadFile(p)
		if m := inline.Find(b); m != nil && !strings.HasSuffix(p, ".js") {
			t.Errorf("%s has inline code: %q", p, m)
		}
		if m := foreign.Find(b); m != nil {
			t.Errorf("%s loads from another origin: %q", p, m)
		}
		if strings.HasSuffix(p, ".js") && regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|eval\(|new Function`).Match(b) {
			t.Errorf("%s writes markup or evaluates strings", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestQRDrawsTheCodesModules(t *testing.T) {
	const link = "http://127.0.0.1:7777/#pair=0123456789abcdef"
	got, err := QR(link)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := qrcode.New(link, qrcode.Medium)
	bits := q.Bitmap()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != (len(bits)+1)/2 {
		t.Fatalf("%d lines for %d rows", len(lines), len(bits))
	}
	// Each character is two rows: upper and lower half, drawn when light.
	for y, line := range lines {
		for x, r := range []rune(line) {
			up, low := !bits[2*y][x], 2*y+1 < len(bits) && !bits[2*y+1][x]
			want := map[[2]bool]rune{{false, false}: ' ', {true, true}: '█', {true, false}: '▀', {false, true}: '▄'}[[2]bool{up, low}]
			if r != want {
				t.Fatalf("row %d col %d: %q, want %q", y, x, r, want)
			}
		}
	}
}
