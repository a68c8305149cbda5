package remote

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/message"
)

func TestFileAttachmentsCarryTheBytesOrFailTheMessage(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, size int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Repeat("x", size)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	small, big := write("small.md", 3), write("big.bin", MaxFileBytes)
	link := filepath.Join(dir, "link.md")
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		atts  []message.Attachment
		fails string // "" when it goes
	}{
		{"a file goes with its name, type and base64 bytes", []message.Attachment{{Path: small}}, ""},
		{"one file up to the cap goes", []message.Attachment{{Path: big}}, ""},
		{"files past the cap together fail", []message.Attachment{{Path: big}, {Path: small}}, "MiB in all"},
		{"more than sixteen files fail", make([]message.Attachment, MaxFiles+1), "at most 16"},
		{"a file refused on arrival fails", []message.Attachment{{FileName: "gone.txt", Refused: message.AttachmentOverQuota}}, "did not arrive"},
		{"a symlink is not followed", []message.Attachment{{Path: link}}, "link.md"},
		{"a missing file fails", []message.Attachment{{Path: filepath.Join(dir, "nope")}}, "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fileAttachments(tt.atts)
			if tt.fails != "" {
				if !errors.Is(err, ErrAttachment) || !IsRefusal(err) || !strings.Contains(err.Error(), tt.fails) {
					t.Fatalf("err = %v, want a refusal naming %q", err, tt.fails)
				}
				return
			}
			if err != nil || len(got) != 1 {
				t.Fatalf("%+v, %v", got, err)
			}
			b, _ := os.ReadFile(tt.atts[0].Path)
			if got[0].FileName != filepath.Base(tt.atts[0].Path) || got[0].FileContent != base64.StdEncoding.EncodeToString(b) || got[0].FileType == "" {
				t.Fatalf("got %+v", got[0].FileName)
			}
		})
	}
}
