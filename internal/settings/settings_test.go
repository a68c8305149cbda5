package settings

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// load runs Load on a FlagSet with a few flags, the file body in dir/app.json.
func load(t *testing.T, file string, vars map[string]string, args ...string) (*Settings, *flag.FlagSet, error) {
	t.Helper()
	dir := t.TempDir()
	if file != "" {
		if err := os.WriteFile(filepath.Join(dir, "app.json"), []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fs := flag.NewFlagSet("app", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("conf", "", "config file")
	fs.String("name", "dflt", "name")
	fs.Duration("wait", time.Second, "wait")
	fs.String("api-token", "", "a secret by its name")
	fs.Func("tag", "repeatable", func(string) error { return nil })
	st, _, err := Load(fs, args, Options{
		Getenv: func(k string) string { return vars[k] }, EnvPrefix: "APP_", ConfigFlag: "conf",
		DefaultFiles: func(*flag.FlagSet) []string { return []string{filepath.Join(dir, "app.json")} },
		KeyHint:      "see app -h",
	})
	return st, fs, err
}

func TestLoadLayers(t *testing.T) {
	st, fs, err := load(t, `{"name": "filed", "wait": "3s", "tag": ["a", "b"]}`,
		map[string]string{"APP_WAIT": "4s", "APP_TAG": "c"}, "--name", "flagged")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Source{"name": Flag, "wait": Env, "tag": Env, "api-token": Default}
	for k, src := range want {
		if got, _ := st.Source(k); got != src {
			t.Errorf("%s from %v, want %v", k, got, src)
		}
	}
	if got := fs.Lookup("wait").Value.String(); got != "4s" {
		t.Errorf("wait = %s", got)
	}
	if _, ok := st.Source("conf"); ok {
		t.Error("the config flag is listed as a setting")
	}
	if !strings.Contains(fs.Lookup("name").Usage, "(env APP_NAME)") {
		t.Errorf("usage %q does not name the variable", fs.Lookup("name").Usage)
	}
}

func TestLoadErrors(t *testing.T) {
	_, _, err := load(t, "{\n\"nmae\": \"x\",\n\"conf\": \"y\"\n}", nil)
	var se *Error
	if !errors.As(err, &se) || !errors.Is(err, ErrUnknownKey) || !errors.Is(err, ErrNotSettable) || !strings.Contains(err.Error(), "app.json:2") || !strings.Contains(err.Error(), "see app -h") {
		t.Fatalf("err = %v, want an unknown key at line 2 and an unsettable config key", err)
	}
	if _, _, err := load(t, "", map[string]string{"APP_WAIT": "soon"}); !errors.Is(err, ErrBadValue) || !strings.Contains(err.Error(), "APP_WAIT") {
		t.Fatalf("err = %v, want a bad value naming APP_WAIT", err)
	}
	var pe *ParseError
	if _, _, err := load(t, "", nil, "--nope"); !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *ParseError", err)
	}
}

func TestSecretsAreRedacted(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "s")
	if err := os.WriteFile(secret, []byte(" hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, fs, err := load(t, "", map[string]string{"APP_NAME_FILE": secret, "APP_API_TOKEN": "tok-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.Lookup("name").Value.String(); got != "hunter2" {
		t.Fatalf("name = %q, want the file's trimmed text", got)
	}
	var out bytes.Buffer
	if err := st.Print(&out, true); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, "hunter2") || strings.Contains(s, "tok-1") || !strings.Contains(s, secret) {
		t.Fatalf("printed %s: secrets shown or the file not named", s)
	}
	if got := st.Annotate("--api-token tok-1 is bad"); strings.Contains(got, "tok-1") || !strings.Contains(got, "came from APP_API_TOKEN") {
		t.Fatalf("Annotate = %q", got)
	}
}

func TestSecretsByShapeAreRedacted(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://user:hunter2@api.example:8443", "https://[redacted]@api.example:8443"},
		{"https://tok3n@api.example/v1?x=1", "https://[redacted]@api.example/v1?x=1"},
		{"https://api.example/user@x", "https://api.example/user@x"}, // an @ in the path is no userinfo
		{"exec:/usr/bin/signer --password hunter2", "exec:/usr/bin/signer [redacted]"},
		{"exec:signer", "exec:signer"},
		{"exec:signer --url https://u:p@h", "exec:signer [redacted]"},
		{"see https://a:b@h and ftp://c@d", "see https://[redacted]@h and ftp://[redacted]@d"},
		{"plain", "plain"},
	}
	for _, tt := range tests {
		if got := redactInline(tt.in); got != tt.want {
			t.Errorf("redactInline(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}

	fs := flag.NewFlagSet("app", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("url", "", "a URL")
	fs.String("signer", "", "exec:COMMAND")
	fs.Func("mirror", "repeatable", func(string) error { return nil })
	st, _, err := Load(fs, []string{"--url", "https://u:hunter2@h", "--signer", "exec:sign --key hunter2", "--mirror", "https://m:hunter2@m"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.Lookup("url").Value.String(); got != "https://u:hunter2@h" {
		t.Fatalf("url = %q: the value itself must stay whole", got)
	}
	for _, asJSON := range []bool{false, true} {
		var out bytes.Buffer
		if err := st.Print(&out, asJSON); err != nil {
			t.Fatal(err)
		}
		if s := out.String(); strings.Contains(s, "hunter2") || !strings.Contains(s, "exec:sign [redacted]") || !strings.Contains(s, "https://[redacted]@h") {
			t.Fatalf("printed (json %v):\n%s", asJSON, s)
		}
	}
	msg := st.Annotate(`--url "https://u:hunter2@h": want a host; --signer "exec:sign --key hunter2" failed`)
	if strings.Contains(msg, "hunter2") || !strings.Contains(msg, "exec:sign [redacted]") {
		t.Fatalf("Annotate = %q", msg)
	}
}
