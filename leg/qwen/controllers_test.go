package qwen

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/testkit/clock"
)

func newStore(t *testing.T) *Controllers {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	return NewControllers(filepath.Join(dir, "controllers.json"), clock.NewFakeClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)))
}

func TestControllers(t *testing.T) {
	t.Run("a token is shown once and only its hash is stored, 0600 in a 0700 directory", func(t *testing.T) {
		c := newStore(t)
		tok, rec, err := c.Add("  voice\nfront-end ")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(tok), "qpc_") || !isHexToken(string(tok)[4:], 64) {
			t.Fatalf("token shape %d chars", len(tok))
		}
		if !validControllerID(rec.ID) || rec.Label != "voice front-end" || rec.TokenHash != HashControllerToken(string(tok)) {
			t.Fatalf("record %+v", rec)
		}
		b, err := os.ReadFile(c.Path())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), string(tok)[4:]) {
			t.Fatal("the token itself is in the file")
		}
		want := "{\n  \"schemaVersion\": 1,\n  \"controllers\": [\n    {\n      \"id\": \"" + rec.ID + "\",\n      \"label\": \"voice front-end\",\n" +
			"      \"tokenHash\": \"" + rec.TokenHash + "\",\n      \"createdAt\": 1777593600000\n    }\n  ]\n}"
		if string(b) != want {
			t.Fatalf("file\n%s\nwant\n%s", b, want)
		}
		fi, _ := os.Stat(c.Path())
		di, _ := os.Stat(filepath.Dir(c.Path()))
		if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
			t.Fatalf("modes %v %v", fi.Mode(), di.Mode())
		}
	})
	t.Run("Verify finds the grant for its token and nothing for others", func(t *testing.T) {
		c := newStore(t)
		tok, rec, _ := c.Add("a")
		tok2, rec2, _ := c.Add("b")
		if got, ok := c.Verify(string(tok)); !ok || got != rec {
			t.Fatalf("got %+v %v", got, ok)
		}
		if got, ok := c.Verify(string(tok2)); !ok || got != rec2 {
			t.Fatalf("got %+v %v", got, ok)
		}
		for _, bad := range []string{"", "qpc_", string(tok)[:len(tok)-1], strings.TrimPrefix(string(tok), "qpc_"), "qpc_" + strings.Repeat("0", 300)} {
			if _, ok := c.Verify(bad); ok {
				t.Errorf("verified %q", bad)
			}
		}
	})
	t.Run("a removed grant stops verifying; an unknown id removes nothing", func(t *testing.T) {
		c := newStore(t)
		tok, rec, _ := c.Add("a")
		if _, ok, err := c.Remove("c_ffffffff"); ok || err != nil {
			t.Fatalf("removed an unknown id: %v %v", ok, err)
		}
		got, ok, err := c.Remove("  " + strings.ToUpper(rec.ID) + " ")
		if err != nil || !ok || got != rec {
			t.Fatalf("Remove = %+v %v %v", got, ok, err)
		}
		if _, ok := c.Verify(string(tok)); ok {
			t.Fatal("a removed grant verified")
		}
		if list, _ := c.List(); len(list) != 0 {
			t.Fatalf("list %+v", list)
		}
	})
	labels := []struct {
		name, label string
		err         error
	}{
		{"a blank label", " \u200b ", ErrInvalidLabel},
		{"a label over 40 UTF-16 units", strings.Repeat("😀", 21), ErrInvalidLabel},
		{"a label of exactly 40 units", strings.Repeat("😀", 20), nil},
		{"a label that differs only in case", "VOICE", ErrDuplicateLabel},
	}
	for _, tt := range labels {
		t.Run("adding "+tt.name+" gives "+fmt.Sprint(tt.err), func(t *testing.T) {
			c := newStore(t)
			if _, _, err := c.Add("voice"); err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.Add(tt.label); !errors.Is(err, tt.err) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	t.Run("the 33rd grant is refused", func(t *testing.T) {
		c := newStore(t)
		for i := range MaxControllers {
			if _, _, err := c.Add(fmt.Sprint("p", i)); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := c.Add("one more"); !errors.Is(err, ErrTooManyControllers) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a file with a malformed grant lists the rest but is not added to", func(t *testing.T) {
		c := newStore(t)
		_, rec, _ := c.Add("good")
		b, _ := os.ReadFile(c.Path())
		broken := strings.Replace(string(b), `"controllers": [`, `"controllers": [{"id": "x"},`, 1)
		if err := os.WriteFile(c.Path(), []byte(broken), 0o600); err != nil {
			t.Fatal(err)
		}
		if list, err := c.List(); err != nil || len(list) != 1 || list[0] != rec {
			t.Fatalf("List = %+v %v", list, err)
		}
		if _, _, err := c.Add("other"); !errors.Is(err, ErrInvalidControllers) {
			t.Fatalf("err = %v", err)
		}
		if _, ok, err := c.Remove(rec.ID); !ok || err != nil {
			t.Fatalf("Remove = %v %v", ok, err)
		}
	})
	t.Run("a symlinked file grants nothing and is not written through", func(t *testing.T) {
		c := newStore(t)
		_, _, _ = c.Add("seed") // creates the directory
		real := filepath.Join(t.TempDir(), "elsewhere.json")
		os.WriteFile(real, []byte(`{"schemaVersion":1,"controllers":[]}`), 0o600)
		os.Remove(c.Path())
		if err := os.Symlink(real, c.Path()); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Add("x"); err == nil {
			t.Fatal("wrote through a symlink")
		}
		if _, ok := c.Verify("qpc_x"); ok {
			t.Fatal("verified")
		}
	})
	t.Run("a missing file holds no grants", func(t *testing.T) {
		c := newStore(t)
		if list, err := c.List(); err != nil || len(list) != 0 {
			t.Fatalf("List = %v %v", list, err)
		}
	})
	t.Run("concurrent adds each get their own grant", func(t *testing.T) {
		c := newStore(t)
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() {
				if _, _, err := c.Add(fmt.Sprint("g", i)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if list, _ := c.List(); len(list) != 10 {
			t.Fatalf("%d grants", len(list))
		}
	})
}

func TestParseControllersReadsQwenCodesFile(t *testing.T) {
	file := `{
  "schemaVersion": 1,
  "controllers": [
    {"id": "c_0a1b2c3d", "label": "voice\u0007relay", "tokenHash": "` + strings.Repeat("ab", 32) + `", "createdAt": 1788959000000.5},
    {"id": "c_0A1B2C3D", "label": "bad id", "tokenHash": "` + strings.Repeat("ab", 32) + `", "createdAt": 1},
    {"id": "c_00000001", "label": "bad hash", "tokenHash": "AB", "createdAt": 1},
    {"id": "c_00000002", "label": "", "tokenHash": "` + strings.Repeat("cd", 32) + `", "createdAt": 1},
    {"id": "c_00000003", "label": "no time", "tokenHash": "` + strings.Repeat("cd", 32) + `"},
    {"id": "c_00000004", "label": "inf time", "tokenHash": "` + strings.Repeat("cd", 32) + `", "createdAt": 1e999}
  ]
}`
	cs, err := ParseControllers([]byte(file), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Label != "voice relay" || cs[0].CreatedAt.UnixMilli() != 1788959000000 {
		t.Fatalf("got %+v", cs)
	}
	if _, err := ParseControllers([]byte(file), false); !errors.Is(err, ErrInvalidControllers) {
		t.Fatalf("strict read: %v", err)
	}
	for _, bad := range []string{`{"schemaVersion": 2, "controllers": []}`, `{"controllers": []}`, `{"schemaVersion": 1}`, `[]`, `{"schemaVersion": 1, "controllers": {}}`} {
		if _, err := ParseControllers([]byte(bad), true); !errors.Is(err, ErrInvalidControllers) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
