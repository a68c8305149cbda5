package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
)

func TestFilesFlagsAreChecked(t *testing.T) {
	tests := []struct {
		name string
		o    filesOpts
		ok   bool
		dir  string
	}{
		{"the defaults pass", filesOpts{uploadsQuota: "1GiB", maxAge: time.Hour}, true, "/state/files"},
		{"none turns attachments off", filesOpts{dir: "none", uploadsQuota: "1GiB", maxAge: time.Hour}, true, ""},
		{"a directory of one's own", filesOpts{dir: "/srv/share/", uploadsQuota: "1GiB", maxAge: time.Hour}, true, "/srv/share"},
		{"a relative directory is refused", filesOpts{dir: "share", uploadsQuota: "1GiB", maxAge: time.Hour}, false, ""},
		{"a zero quota is refused", filesOpts{uploadsQuota: "0", maxAge: time.Hour}, false, ""},
		{"a bad quota is refused", filesOpts{uploadsQuota: "lots", maxAge: time.Hour}, false, ""},
		{"a zero max age is refused", filesOpts{uploadsQuota: "1GiB"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.check()
			if (err == nil) != tt.ok {
				t.Fatalf("check = %v, want ok %v", err, tt.ok)
			}
			if tt.ok && tt.o.filesDir("/state") != tt.dir {
				t.Fatalf("files dir %q, want %q", tt.o.filesDir("/state"), tt.dir)
			}
		})
	}
}

// TestSendFileWorksFromTheFilesDirectoryOnly: the CLI attaches a file in
// <state-dir>/files, also when named through a symlink of the user's
// outside it, and a file elsewhere is refused with the directory named.
func TestSendFileWorksFromTheFilesDirectoryOnly(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	inside := filepath.Join(g.StateDir, "files", "report.txt")
	if err := os.WriteFile(inside, []byte("report"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "report-link.txt")
	if err := os.Symlink(inside, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{inside, link} {
		out, _, err := g.Run(t, "send", "work-08", "see "+filepath.Base(p), "--file", p)
		if err != nil {
			t.Fatalf("send --file %s: %v", p, err)
		}
		id := strings.TrimSpace(out)
		if _, err := fk.WaitReceived(ctxT(t), func(r fakeclaude.Received) bool {
			return r.Frame.MsgID == id && len(r.Frame.FileAttachments) == 1 && r.Frame.FileAttachments[0].FileName == "report.txt"
		}); err != nil {
			t.Fatalf("send --file %s: the attachment never arrived: %v", p, err)
		}
	}
	outside := filepath.Join(t.TempDir(), "elsewhere.txt")
	if err := os.WriteFile(outside, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := g.Run(t, "send", "work-08", "nope", "--file", outside)
	if err == nil || !strings.Contains(err.Error(), "outside the files directory") {
		t.Fatalf("send --file outside: err %v, want it refused as outside the files directory", err)
	}
}
