package console

import (
	"embed"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"

	"github.com/skip2/go-qrcode"

	"github.com/sessiongateway/gateway/api"
)

//go:embed assets
var assets embed.FS

// CSP allows scripts, styles, images and connections from this origin only,
// no inline script or style, no framing, no plugins, no foreign forms.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console: / is the page, /console/NAME an asset.
func Handler() http.Handler {
	sub, _ := fs.Sub(assets, "assets") // the directory is embedded above
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-cache")
		name := strings.TrimPrefix(r.URL.Path, "/console/")
		if r.URL.Path == "/" {
			name = "index.html"
		}
		if name == "" || strings.Contains(name, "/") {
			http.NotFound(w, r)
			return
		}
		if name == "index.html" {
			// FileServer redirects index.html to ./; serve the bytes instead.
			b, err := fs.ReadFile(sub, name)
			if err != nil {
				http.NotFound(w, r)
				return
			}
			h.Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(b)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		files.ServeHTTP(w, r2)
	})
}

// QR renders text as a QR code of Unicode half blocks for a terminal: the
// light modules (and the quiet zone) are drawn, the dark ones left blank, so
// on the usual dark terminal a phone reads dark on light.
func QR(text string) (string, error) {
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		return "", err
	}
	return q.ToSmallString(false), nil
}

// PrintPairing prints a pairing's link, with base (the console's address as
// a phone reaches it) in place of the gateway's own when given, its QR code
// and what it grants until when.
func PrintPairing(w io.Writer, p api.Pairing, base string) error {
	if base != "" {
		p.URL = strings.TrimSuffix(base, "/") + "/#pair=" + p.Code
	}
	qr, err := QR(p.URL)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n%s\nscopes %s; works once, until %s\n", qr, p.URL, p.Scopes, p.ExpiresAt.Local().Format("15:04:05"))
	return err
}
