package abuse

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// mint adds a token with scopes through the CLI and returns it.
func mint(t *testing.T, g *gatewaytest.Gateway, label, scopes string) string {
	t.Helper()
	out, _, err := g.Run(t, "tokens", "add", "--label", label, "--scope", scopes)
	if err != nil {
		t.Fatalf("tokens add --scope %s: %v", scopes, err)
	}
	return strings.TrimSpace(out)
}

// leaked reports whether any file the fake was sent holds secret.
func leaked(fk *fakeclaude.Peer, secret []byte) bool {
	for _, r := range fk.Received() {
		for _, a := range r.Frame.FileAttachments {
			if b, err := os.ReadFile(a.Path); err == nil && string(b) == string(secret) {
				return true
			}
		}
	}
	return false
}

func wantRefused(t *testing.T, err error, status int) {
	t.Helper()
	var ae *api.APIError
	if !errors.As(err, &ae) || ae.Status != status {
		t.Fatalf("send = %v, want a %d", err, status)
	}
}

// TestATokenReadsOnlyTheFilesDirectory: a leaked send token asks the
// gateway to attach its own api-token (any file it can read) and send it
// to a session of the attacker's choosing. Only a token with the files
// scope may attach, and only from the files directory, without following
// a symlink out of it.
func TestATokenReadsOnlyTheFilesDirectory(t *testing.T) {
	w := gatewaytest.NewWorld(t)
	addr := testutil.FreePort(t)
	g := gatewaytest.Start(t, w, "gateway", "--legs", "claude", "--api", addr)
	fk := fakeclaude.Start(t, fakeclaude.Config{Name: "work-08", ConfigDir: w.ConfigDir, RuntimeDir: w.Runtime})
	g.WaitListed(t, "work-08")
	tokenFile := filepath.Join(w.StateDir, "api-token")
	secret, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	send := func(tok string, files ...string) error {
		_, err := api.NewTCPClient("http://"+addr, tok).Send(ctx, api.SendBody{To: "work-08", Text: "see file", Files: files})
		return err
	}

	sender := mint(t, g, "bot", "read,send")
	wantRefused(t, send(sender, tokenFile), 403)

	filer := mint(t, g, "filer", "read,send,files")
	wantRefused(t, send(filer, tokenFile), 403)
	wantRefused(t, send(filer, "/etc/passwd"), 403)
	filesDir := filepath.Join(w.StateDir, "files")
	link := filepath.Join(filesDir, "innocent.txt")
	if err := os.Symlink(tokenFile, link); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, send(filer, link), 403)
	wantRefused(t, send(filer, filesDir+"/../api-token"), 400)
	if leaked(fk, secret) {
		t.Fatal("the api token reached the session")
	}

	ok := filepath.Join(filesDir, "notes.txt")
	if err := os.WriteFile(ok, []byte("shared notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := send(filer, ok); err != nil {
		t.Fatalf("a file in the files directory: %v", err)
	}
	r, err := fk.WaitReceived(ctx, func(r fakeclaude.Received) bool { return len(r.Frame.FileAttachments) == 1 })
	if err != nil {
		t.Fatal(err)
	}
	if a := r.Frame.FileAttachments[0]; a.FileName != "notes.txt" {
		t.Fatalf("attachment %+v", a)
	}
	_ = message.ProtocolClaude
}
