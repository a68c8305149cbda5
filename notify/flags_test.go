package notify

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/internal/safefile"
)

func TestTheSecretFileIsCheckedLikeATokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, perm os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, perm); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	owned := write("owned", "s3cret\n", 0o600)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(owned, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		want    error // nil: read
		wantErr string
	}{
		{"a file only its owner may read is read", owned, nil, ""},
		{"a group-readable file is refused", write("group", "s3cret", 0o640), safefile.ErrLooseMode, "chmod"},
		{"a world-readable file is refused", write("world", "s3cret", 0o644), safefile.ErrLooseMode, "chmod"},
		{"a symlink is refused", link, safefile.ErrSymlink, ""},
		{"an empty file is refused", write("empty", " \n", 0o600), nil, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			f := RegisterFlags(fs)
			if err := fs.Parse([]string{"--notify", "https://hooks.example/a", "--notify-secret-file", tt.path}); err != nil {
				t.Fatal(err)
			}
			err := f.Check()
			switch {
			case tt.want == nil && tt.wantErr == "":
				if err != nil || string(f.secret) != "s3cret" {
					t.Fatalf("secret %q, err %v", f.secret, err)
				}
			case err == nil:
				t.Fatal("accepted")
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Fatalf("error %v, want %v", err, tt.want)
			case !strings.Contains(err.Error(), "--notify-secret-file") || !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q does not name the flag and %q", err, tt.wantErr)
			}
		})
	}
}
