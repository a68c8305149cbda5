package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckFileNamesWhatIsInTheWay(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		want       error
	}{
		{"an absent file may be made", filepath.Join(dir, "absent"), nil},
		{"a regular file may be opened", regular, nil},
		{"a symlink is refused", link, ErrSymlink},
		{"a directory is refused", dir, ErrNotRegular},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckFile(tt.path); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("CheckFile = %v, want %v", err, tt.want)
			}
		})
	}
}
