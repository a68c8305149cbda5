package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/router"
)

func TestFilesNeedTheScopeAndTheFilesDirectory(t *testing.T) {
	root := t.TempDir()
	filesDir := filepath.Join(root, "files")
	if err := os.MkdirAll(filepath.Join(filesDir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(root, "api-token")
	for p, body := range map[string]string{secret: "tok\n", filepath.Join(filesDir, "notes.txt"): "notes", filepath.Join(filesDir, "sub", "deep.txt"): "deep"} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(filesDir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(filesDir, "up")); err != nil {
		t.Fatal(err)
	}
	// The files directory named through a symlink of its own still works.
	alias := filepath.Join(t.TempDir(), "files-alias")
	if err := os.Symlink(filesDir, alias); err != nil {
		t.Fatal(err)
	}
	leg := claudeStub() // it carries files, as Claude Code's leg does
	srv := NewServer(Config{Router: router.New(router.Config{}, leg.With(legtest.CarriesFiles)), Token: "tok", FilesDir: alias,
		Tokens: memTokens{
			"sender": {ID: "t_send", Label: "bot", Scopes: Scopes(1<<ScopeRead | 1<<ScopeSend)},
			"filer":  {ID: "t_files", Label: "filer", Scopes: Scopes(1<<ScopeSend | 1<<ScopeFiles)},
		}})
	h := srv.TCPHandler(testHost)
	body := func(files ...string) string {
		b, _ := json.Marshal(SendBody{To: "review", Body: "see", Files: files})
		return string(b)
	}
	tests := []struct {
		name, token string
		files       []string
		status      int
		missing     string
	}{
		{"a send token cannot attach even inside the directory", "sender", []string{filepath.Join(alias, "notes.txt")}, 403, "files"},
		{"a send token cannot attach the api token", "sender", []string{secret}, 403, "files"},
		{"a files token cannot reach outside the directory", "filer", []string{secret}, 403, ""},
		{"a files token cannot reach /etc/passwd", "filer", []string{"/etc/passwd"}, 403, ""},
		{"a symlink to a file outside is not followed", "filer", []string{filepath.Join(alias, "link.txt")}, 403, ""},
		{"a symlinked directory is not followed", "filer", []string{filepath.Join(alias, "up", "api-token")}, 403, ""},
		{".. is refused", "filer", []string{alias + "/../api-token"}, 400, ""},
		{"a relative path is refused", "filer", []string{"notes.txt"}, 400, ""},
		{"a directory is refused", "filer", []string{filepath.Join(alias, "sub")}, 400, ""},
		{"a missing file is refused", "filer", []string{filepath.Join(alias, "nope.txt")}, 400, ""},
		{"one bad file refuses the send", "filer", []string{filepath.Join(alias, "notes.txt"), secret}, 403, ""},
		{"a files token attaches from the directory", "filer", []string{filepath.Join(alias, "notes.txt"), filepath.Join(filesDir, "sub", "deep.txt")}, 201, ""},
		{"the default token attaches from the directory", "tok", []string{filepath.Join(filesDir, "notes.txt")}, 201, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := tcpDo(h, "POST", "/v1/messages", tt.token, body(tt.files...))
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d: %s", rec.Code, tt.status, rec.Body.String())
			}
			var e Error
			if tt.status >= 400 && (json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.MissingScope != tt.missing) {
				t.Fatalf("body = %s, want missing_scope %q", rec.Body.String(), tt.missing)
			}
		})
	}
	sent := leg.Sent()
	if len(sent) != 2 {
		t.Fatalf("the leg was given %d sends, want the 2 allowed", len(sent))
	}
	want := []string{filepath.Join(filesDir, "notes.txt"), filepath.Join(filesDir, "sub", "deep.txt")}
	for i, a := range sent[0].Attachments {
		if a.Path != want[i] {
			t.Errorf("attachment %d handed on as %s, want the real path %s", i, a.Path, want[i])
		}
	}
	for _, m := range sent {
		for _, a := range m.Attachments {
			if strings.HasSuffix(a.Path, "api-token") {
				t.Fatal("the api token was handed to the leg")
			}
		}
	}
}

func TestFilesAreOffWithoutADirectory(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(p, []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := newTestServer() // no FilesDir
	b, _ := json.Marshal(SendBody{To: "review", Body: "see", Files: []string{p}})
	rec := tcpDo(srv.Handler(), "POST", "/v1/messages", "", string(b))
	if rec.Code != 403 || !strings.Contains(rec.Body.String(), "--files-dir") {
		t.Fatalf("status %d: %s, want 403 naming --files-dir", rec.Code, rec.Body.String())
	}
}

func TestTheFilesScopeParsesAndPrints(t *testing.T) {
	sc, err := ParseScopes("send, files")
	if err != nil || !sc.Has(ScopeFiles) || !sc.Has(ScopeSend) || sc.Has(ScopeRead) || sc.String() != "send,files" {
		t.Fatalf("ParseScopes = %v (%s), %v", sc, sc, err)
	}
	if !AllScopes.Has(ScopeFiles) {
		t.Fatal("the default token and the Unix socket lack the files scope")
	}
	if sc, _ := ParseScopes("read,send,approve"); sc.Has(ScopeFiles) {
		t.Fatal("a token minted before the files scope gained it")
	}
}
