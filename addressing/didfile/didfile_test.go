package didfile

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/addressing"
)

func addr(t testing.TB, s string) addressing.Address {
	t.Helper()
	a, err := addressing.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// format is Parse's printer: one object, keys sorted, values canonical.
func format(m map[string]addressing.Address) []byte {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v.String()
	}
	b, err := json.Marshal(out)
	if err != nil {
		panic(err)
	}
	return b
}

var parseTests = []struct {
	name string
	in   string
	want map[string]string // nil when the file is refused
	why  Reason
}{
	{"a map of DIDs to addresses of every kind is read",
		`{"did:web:example.com:alice": "bridge:session_01abc", "did:key:z6MkhaXg": "work-08",
		  "did:web:sock": "uds:/tmp/cc-socks/1.sock", "did:web:pinned": "work-08 [3f2a1c]", "did:web:ref": "[3f2a1c]",
		  "did:web:bare": "/run/user/1000/qwen-socks/7.sock"}`,
		map[string]string{
			"did:web:example.com:alice": "bridge:session_01abc", "did:key:z6MkhaXg": "work-08",
			"did:web:sock": "uds:/tmp/cc-socks/1.sock", "did:web:pinned": "work-08 [3f2a1c]", "did:web:ref": "[3f2a1c]",
			"did:web:bare": "uds:/run/user/1000/qwen-socks/7.sock",
		}, 0},
	{"an empty object lists nothing", " \n{}\n", map[string]string{}, 0},
	{"a value with spaces around it is read as addressing reads it", `{"did:web:a": "  work-08 "}`, map[string]string{"did:web:a": "work-08"}, 0},
	{"an empty file is refused", ``, nil, ReasonSyntax},
	{"an array is refused", `[]`, nil, ReasonSyntax},
	{"text after the object is refused", `{} {}`, nil, ReasonSyntax},
	{"a truncated object is refused", `{"did:web:a": "x"`, nil, ReasonSyntax},
	{"invalid UTF-8 is refused", "{\"did:web:a\": \"x\xff\"}", nil, ReasonSyntax},
	{"a DID listed twice is refused", `{"did:web:a": "x", "did:web:a": "y"}`, nil, ReasonDuplicate},
	{"a DID listed twice through an escape is refused", `{"did:web:a": "x", "did:web:\u0061": "y"}`, nil, ReasonDuplicate},
	{"a key that is a name is refused", `{"alice": "x"}`, nil, ReasonKey},
	{"a key with spaces around it is refused", `{" did:web:a": "x"}`, nil, ReasonKey},
	{"a key with an upper-case method is refused", `{"did:WEB:a": "x"}`, nil, ReasonKey},
	{"a number value is refused", `{"did:web:a": 1}`, nil, ReasonValue},
	{"a null value is refused", `{"did:web:a": null}`, nil, ReasonValue},
	{"an object value is refused", `{"did:web:a": {"to": "x"}}`, nil, ReasonValue},
	{"an empty value is refused", `{"did:web:a": ""}`, nil, ReasonValue},
	{"a relative socket path is refused", `{"did:web:a": "uds:relative.sock"}`, nil, ReasonValue},
	{"a value that is another DID is refused", `{"did:web:a": "did:web:b"}`, nil, ReasonDIDValue},
}

func TestParse(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.in))
			if tt.want == nil {
				var fe *FileError
				if !errors.As(err, &fe) || fe.Reason != tt.why {
					t.Fatalf("Parse = %v, %v; want a FileError for %s", m, err, tt.why)
				}
				if fe.Error() == "" || strings.Contains(fe.Error(), "Reason(") {
					t.Fatalf("error text %q", fe.Error())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]addressing.Address{}
			for k, v := range tt.want {
				want[k] = addr(t, v)
			}
			if !reflect.DeepEqual(m, want) {
				t.Fatalf("Parse = %v, want %v", m, want)
			}
		})
	}
	t.Run("a DID value says the resolver would loop", func(t *testing.T) {
		_, err := Parse([]byte(`{"did:web:a": "did:web:b"}`))
		if !errors.Is(err, addressing.ErrDIDLoop) || !strings.Contains(err.Error(), `"did:web:a"`) {
			t.Fatalf("got %v, want ErrDIDLoop naming the entry", err)
		}
	})
	t.Run("more than MaxSize bytes are refused unread", func(t *testing.T) {
		_, err := Parse(make([]byte, MaxSize+1))
		var fe *FileError
		if !errors.As(err, &fe) || fe.Reason != ReasonTooLarge {
			t.Fatalf("got %v, want too-large", err)
		}
	})
}

func TestReasonsHaveWireNamesAndText(t *testing.T) {
	seen := map[string]bool{}
	for r := Reason(1); int(r) < len(reasons); r++ {
		if w := r.String(); w == "" || seen[w] || r.text() == "" {
			t.Fatalf("reason %d: wire %q, text %q", r, w, r.text())
		}
		seen[r.String()] = true
	}
	if got := Reason(0).String(); got != "Reason(0)" {
		t.Fatalf("the zero reason prints %q", got)
	}
}

const sample = `{"did:web:example.com:alice": "work-08", "did:key:z6Mkbob": "bridge:session_01bob"}`

// writeFile writes s to dir/name with exactly mode perm.
func writeFile(t *testing.T, path, s string, perm fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesFilesOthersCouldChange(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) string
		why   Reason // 0: opens
	}{
		{"a private regular file opens", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "dids.json")
			writeFile(t, p, sample, 0o600)
			return p
		}, 0},
		{"a file others may only read opens", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "dids.json")
			writeFile(t, p, sample, 0o644)
			return p
		}, 0},
		{"a symbolic link is refused", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "real.json")
			writeFile(t, p, sample, 0o600)
			l := filepath.Join(dir, "dids.json")
			if err := os.Symlink(p, l); err != nil {
				t.Fatal(err)
			}
			return l
		}, ReasonSymlink},
		{"a group-writable file is refused", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "dids.json")
			writeFile(t, p, sample, 0o620)
			return p
		}, ReasonWritable},
		{"a world-writable file is refused", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "dids.json")
			writeFile(t, p, sample, 0o602)
			return p
		}, ReasonWritable},
		{"a directory is refused", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "dids.json")
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			return p
		}, ReasonNotRegular},
		{"a file over the size cap is refused", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "dids.json")
			writeFile(t, p, "{}"+strings.Repeat(" ", MaxSize), 0o600)
			return p
		}, ReasonTooLarge},
		{"a file with a bad entry is refused", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "dids.json")
			writeFile(t, p, `{"did:web:a": "did:web:b"}`, 0o600)
			return p
		}, ReasonDIDValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.setup(t, t.TempDir())
			r, err := Open(path)
			if tt.why == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if r.Len() != 2 || r.Path() != path {
					t.Fatalf("opened %s with %d entries", r.Path(), r.Len())
				}
				return
			}
			var fe *FileError
			if !errors.As(err, &fe) || fe.Reason != tt.why {
				t.Fatalf("Open = %v, want a FileError for %s", err, tt.why)
			}
			if fe.File != path || !strings.Contains(err.Error(), path) {
				t.Fatalf("the error %q does not name the file %s", err, path)
			}
		})
	}
	t.Run("a missing file is an error that says so", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "nope.json")
		_, err := Open(p)
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), p) {
			t.Fatalf("got %v, want ErrNotExist naming %s", err, p)
		}
	})
}

func TestResolveDID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dids.json")
	writeFile(t, path, sample, 0o600)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   string
		want string
		err  func(error) bool
	}{
		{"a listed DID resolves to its address", "did:web:example.com:alice", "work-08", nil},
		{"another listed DID resolves to a bridge address", "did:key:z6Mkbob", "bridge:session_01bob", nil},
		{"an unlisted DID is an UnknownDIDError", "did:web:example.com:carol", "", func(err error) bool {
			var u *UnknownDIDError
			return errors.As(err, &u) && u.DID == "did:web:example.com:carol" && u.File == path
		}},
		{"an unlisted DID reads as no such session", "did:web:example.com:carol", "", func(err error) bool {
			var nf *addressing.NotFoundError
			return errors.As(err, &nf) && nf.Kind == addressing.KindDID
		}},
		{"an unlisted DID's message names the DID and the file", "did:web:example.com:carol", "", func(err error) bool {
			return strings.Contains(err.Error(), "did:web:example.com:carol") && strings.Contains(err.Error(), path)
		}},
		{"a name is not for a DID resolver", "work-08", "", func(err error) bool { return errors.Is(err, ErrNotDID) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.ResolveDID(context.Background(), addr(t, tt.in))
			if tt.err != nil {
				if err == nil || !tt.err(err) {
					t.Fatalf("ResolveDID(%s) = %v, %v", tt.in, got, err)
				}
				return
			}
			if err != nil || got != addr(t, tt.want) {
				t.Fatalf("ResolveDID(%s) = %v, %v; want %s", tt.in, got, err, tt.want)
			}
		})
	}
	t.Run("a cancelled context stops it", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := r.ResolveDID(ctx, addr(t, "did:key:z6Mkbob")); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestResolverFollowsTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dids.json")
	writeFile(t, path, `{"did:web:a": "alice"}`, 0o600)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	did := addr(t, "did:web:a")
	expect := func(t *testing.T, want string, wantErr func(error) bool) {
		t.Helper()
		got, err := r.ResolveDID(ctx, did)
		if wantErr != nil {
			if err == nil || !wantErr(err) {
				t.Fatalf("got %v, %v; want an error", got, err)
			}
			return
		}
		if err != nil || got != addr(t, want) {
			t.Fatalf("got %v, %v; want %s", got, err, want)
		}
	}
	// Each step sets the modification time itself, so a file system with
	// coarse timestamps cannot hide an edit.
	stamp := time.Now()
	touch := func(t *testing.T) {
		t.Helper()
		stamp = stamp.Add(time.Second)
		if err := os.Chtimes(path, stamp, stamp); err != nil {
			t.Fatal(err)
		}
	}
	isFileError := func(why Reason) func(error) bool {
		return func(err error) bool {
			var fe *FileError
			return errors.As(err, &fe) && fe.Reason == why
		}
	}
	steps := []struct {
		name   string
		change func(t *testing.T)
		want   string
		err    func(error) bool
	}{
		{"an edit in place of the same size is seen", func(t *testing.T) {
			writeFile(t, path, `{"did:web:a": "carla"}`, 0o600)
			touch(t)
		}, "carla", nil},
		{"a file renamed over the path is seen", func(t *testing.T) {
			tmp := filepath.Join(dir, "new.json")
			writeFile(t, tmp, `{"did:web:a": "bridge:session_01x"}`, 0o600)
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}, "bridge:session_01x", nil},
		{"an edit that breaks the file fails every resolution", func(t *testing.T) {
			writeFile(t, path, `{"did:web:a": `, 0o600)
			touch(t)
		}, "", isFileError(ReasonSyntax)},
		{"fixing it again is seen", func(t *testing.T) {
			writeFile(t, path, `{"did:web:a": "dora"}`, 0o600)
			touch(t)
		}, "dora", nil},
		{"making it group-writable is refused without a content change", func(t *testing.T) {
			if err := os.Chmod(path, 0o660); err != nil {
				t.Fatal(err)
			}
		}, "", isFileError(ReasonWritable)},
		{"removing it fails every resolution", func(t *testing.T) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, "", func(err error) bool { return errors.Is(err, fs.ErrNotExist) }},
		{"putting it back is seen", func(t *testing.T) {
			writeFile(t, path, `{"did:web:a": "erin"}`, 0o600)
		}, "erin", nil},
		{"an entry removed from the file is no longer known", func(t *testing.T) {
			writeFile(t, path, `{"did:web:b": "erin"}`, 0o600)
			touch(t)
		}, "", func(err error) bool { var u *UnknownDIDError; return errors.As(err, &u) }},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.change(t)
			expect(t, s.want, s.err)
			expect(t, s.want, s.err) // a second look reads the cached result the same
		})
	}
}

func TestAddressingResolvesThroughTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dids.json")
	writeFile(t, path, sample, 0o600)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	roster := []addressing.Candidate{
		{Address: addr(t, "uds:/tmp/cc-socks/8.sock"), Name: "work-08", SessionID: "s-8", Protocol: "claude"},
	}
	t.Run("a listed DID picks the session its address names", func(t *testing.T) {
		c, err := addressing.ResolveContext(context.Background(), addr(t, "did:web:example.com:alice"), roster, r)
		if err != nil || c != roster[0] {
			t.Fatalf("got %+v, %v", c, err)
		}
	})
	t.Run("an unlisted DID is a not-found naming the DID", func(t *testing.T) {
		_, err := addressing.ResolveContext(context.Background(), addr(t, "did:web:nobody"), roster, r)
		var nf *addressing.NotFoundError
		if !errors.As(err, &nf) || !strings.Contains(err.Error(), "did:web:nobody") {
			t.Fatalf("got %v", err)
		}
	})
}

func FuzzParse(f *testing.F) {
	for _, tt := range parseTests {
		f.Add([]byte(tt.in))
	}
	f.Add([]byte(sample))
	f.Add([]byte(`{"did:a:b%41":"name:abcdef","did:x:y:z":"\\\\.\\pipe\\p"}`))
	f.Add([]byte(`{"did:a:b":"x"}` + "\n\n"))
	f.Add([]byte(`{"did:a:b":"<é> [abcdef]"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) || fe.Reason == 0 || fe.Error() == "" {
				t.Fatalf("Parse failed with %#v, want a *FileError with a reason", err)
			}
			return // refusing is fine; crashing or hanging is not
		}
		out := format(m)
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("printed %s does not parse: %v", out, err)
		}
		if !reflect.DeepEqual(back, m) {
			t.Fatalf("round trip changed %v into %v via %s", m, back, out)
		}
		for k, v := range m {
			if a, err := addressing.Parse(k); err != nil || a.Kind != addressing.KindDID || a.String() != k {
				t.Fatalf("key %q is not a canonical did", k)
			}
			if v.Kind == addressing.KindDID || v.Kind == 0 {
				t.Fatalf("value of %q is %#v", k, v)
			}
		}
	})
}
