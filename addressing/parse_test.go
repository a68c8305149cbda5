package addressing

import (
	"errors"
	"strings"
	"testing"
)

var parseTests = []struct {
	name  string
	in    string
	want  Address
	canon string // String() of want
}{
	{"a uds address keeps its path", "uds:/tmp/cc-socks/4242.sock",
		Address{Kind: KindUDS, Path: "/tmp/cc-socks/4242.sock"}, "uds:/tmp/cc-socks/4242.sock"},
	{"surrounding space is ignored", " \tuds:/tmp/cc-socks/4242.sock\n",
		Address{Kind: KindUDS, Path: "/tmp/cc-socks/4242.sock"}, "uds:/tmp/cc-socks/4242.sock"},
	{"a uds path outside the wire charset prints percent-encoded", "uds:/tmp/my socks/é.sock",
		Address{Kind: KindUDS, Path: "/tmp/my socks/é.sock"}, "uds:/tmp/my%20socks/%C3%A9.sock"},
	{"a percent-encoded uds path is decoded", "uds:/run/user/0/my%20dir/cc-socks/1.sock",
		Address{Kind: KindUDS, Path: "/run/user/0/my dir/cc-socks/1.sock"}, "uds:/run/user/0/my%20dir/cc-socks/1.sock"},
	{"a percent sign in a uds path is encoded as %25", "uds:/tmp/100%25/1.sock",
		Address{Kind: KindUDS, Path: "/tmp/100%/1.sock"}, "uds:/tmp/100%25/1.sock"},
	{"a malformed escape leaves the uds path as written", "uds:/tmp/100%/1.sock",
		Address{Kind: KindUDS, Path: "/tmp/100%/1.sock"}, "uds:/tmp/100%25/1.sock"},
	{"a bare .sock path is not decoded", "/tmp/a%20b.sock",
		Address{Kind: KindUDS, Path: "/tmp/a%20b.sock"}, "uds:/tmp/a%2520b.sock"},
	{"a uds path need not end in .sock", "uds:/run/user/1000/gateway",
		Address{Kind: KindUDS, Path: "/run/user/1000/gateway"}, "uds:/run/user/1000/gateway"},
	{"a uds address of exactly 300 bytes is accepted", "uds:/" + strings.Repeat("a", 295),
		Address{Kind: KindUDS, Path: "/" + strings.Repeat("a", 295)}, "uds:/" + strings.Repeat("a", 295)},
	{"a bare absolute .sock path is a uds address", "/run/user/1000/cc-socks/77.sock",
		Address{Kind: KindUDS, Path: "/run/user/1000/cc-socks/77.sock"}, "uds:/run/user/1000/cc-socks/77.sock"},
	{"a backslash pipe is a pipe", `\\.\pipe\claude-4242`,
		Address{Kind: KindPipe, Path: `\\.\pipe\claude-4242`}, `\\.\pipe\claude-4242`},
	{"a forward-slash pipe prints with backslashes", "//./pipe/claude-4242",
		Address{Kind: KindPipe, Path: `\\.\pipe\claude-4242`}, `\\.\pipe\claude-4242`},
	{"the pipe keyword is case-insensitive", `\\.\PIPE\x`,
		Address{Kind: KindPipe, Path: `\\.\pipe\x`}, `\\.\pipe\x`},
	{"a bridge id keeps its case", "bridge:session_01AbC-9",
		Address{Kind: KindBridge, ID: "session_01AbC-9"}, "bridge:session_01AbC-9"},
	{"a bridge id of 128 characters is accepted", "bridge:" + strings.Repeat("x", 128),
		Address{Kind: KindBridge, ID: strings.Repeat("x", 128)}, "bridge:" + strings.Repeat("x", 128)},
	{"a did splits into method and id", "did:web:example.com",
		Address{Kind: KindDID, Method: "web", ID: "example.com"}, "did:web:example.com"},
	{"a did id may have colons and percent escapes", "did:example:a:b%3A_c-.d",
		Address{Kind: KindDID, Method: "example", ID: "a:b%3A_c-.d"}, "did:example:a:b%3A_c-.d"},
	{"a did id may have an empty segment", "did:x::a",
		Address{Kind: KindDID, Method: "x", ID: ":a"}, "did:x::a"},
	{"a did method may have digits", "did:v2:Z",
		Address{Kind: KindDID, Method: "v2", ID: "Z"}, "did:v2:Z"},
	{"a bracketed ref is a ref", "[3f2a1c]",
		Address{Kind: KindRef, Ref: "3f2a1c"}, "[3f2a1c]"},
	{"six bare lowercase hex digits are a ref", "3f2a1c",
		Address{Kind: KindRef, Ref: "3f2a1c"}, "[3f2a1c]"},
	{"six bare uppercase hex digits are a name", "3F2A1C",
		Address{Kind: KindName, Name: "3F2A1C"}, "3F2A1C"},
	{"a bare name is a name", "work-08",
		Address{Kind: KindName, Name: "work-08"}, "work-08"},
	{"a name may have inner spaces", "my work  session",
		Address{Kind: KindName, Name: "my work  session"}, "my work  session"},
	{"a name may be any script", "ワーク · 仕事",
		Address{Kind: KindName, Name: "ワーク · 仕事"}, "ワーク · 仕事"},
	{"a name of 80 characters is accepted", strings.Repeat("é", 80),
		Address{Kind: KindName, Name: strings.Repeat("é", 80)}, strings.Repeat("é", 80)},
	{"a name with a ref pins one of two twins", "work-08 [3f2a1c]",
		Address{Kind: KindName, Name: "work-08", Ref: "3f2a1c"}, "work-08 [3f2a1c]"},
	{"a name with a ref needs no space before the bracket", "work-08[3f2a1c]",
		Address{Kind: KindName, Name: "work-08", Ref: "3f2a1c"}, "work-08 [3f2a1c]"},
	{"a hex name with a ref is a name", "abcdef [3f2a1c]",
		Address{Kind: KindName, Name: "abcdef", Ref: "3f2a1c"}, "abcdef [3f2a1c]"},
	{"name: forces a hex string to be a name", "name:3f2a1c",
		Address{Kind: KindName, Name: "3f2a1c"}, "name:3f2a1c"},
	{"name: before an ordinary name changes nothing", "name:work",
		Address{Kind: KindName, Name: "work"}, "work"},
	{"name: works with a ref too", "name:3f2a1c [abcdef]",
		Address{Kind: KindName, Name: "3f2a1c", Ref: "abcdef"}, "3f2a1c [abcdef]"},
	{"a name that starts with a scheme in capitals is a name", "UDS:/x",
		Address{Kind: KindName, Name: "UDS:/x"}, "UDS:/x"},
	{"a relative .sock path is a name", "cc-socks/1.sock",
		Address{Kind: KindName, Name: "cc-socks/1.sock"}, "cc-socks/1.sock"},
}

func TestParse(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q) failed: %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("Parse(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
			if s := got.String(); s != tt.canon {
				t.Fatalf("String() = %q, want %q", s, tt.canon)
			}
			again, err := Parse(got.String())
			if err != nil || again != got {
				t.Fatalf("Parse(String()) = %#v, %v; want %#v", again, err, got)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want ParseReason
	}{
		{"an empty string is rejected", "", ReasonEmpty},
		{"white space alone is rejected", " \t\n", ReasonEmpty},
		{"anything over 2048 bytes is rejected", "did:x:" + strings.Repeat("a", 2043), ReasonTooLong},
		{"a uds address over 300 bytes is rejected", "uds:/" + strings.Repeat("a", 296), ReasonTooLong},
		{"a bare path over the uds cap is rejected", "/" + strings.Repeat("a", 291) + ".sock", ReasonTooLong},
		{"a relative uds path is rejected", "uds:tmp/a.sock", ReasonPathNotAbsolute},
		{"an empty uds path is rejected", "uds:", ReasonPathNotAbsolute},
		{"a space after uds: is rejected", "uds: /tmp/a.sock", ReasonPathNotAbsolute},
		{"a uds path with NUL is rejected", "uds:/tmp/a\x00.sock", ReasonPathNUL},
		{"a uds path with an encoded NUL is rejected", "uds:/tmp/a%00.sock", ReasonPathNUL},
		{"a uds path of invalid UTF-8 is rejected", "uds:/tmp/a\xff.sock", ReasonPathEncoding},
		{"a uds path whose encoding would pass 300 bytes is rejected", "uds:/" + strings.Repeat("é", 50), ReasonTooLong},
		{"a uds path with a double slash is rejected", "uds://tmp/a.sock", ReasonPathNotClean},
		{"a uds path with dot-dot is rejected", "uds:/tmp/../a.sock", ReasonPathNotClean},
		{"a uds path with a trailing slash is rejected", "uds:/tmp/", ReasonPathNotClean},
		{"a bare path not ending in .sock is rejected", "/tmp/cc-socks/1", ReasonBarePath},
		{"a bare .sock path that is not clean is rejected", "/tmp/./1.sock", ReasonPathNotClean},
		{"a bare .sock path with NUL is rejected", "/tmp/\x00.sock", ReasonPathNUL},
		{"a pipe with no name is rejected", `\\.\pipe\`, ReasonPipeName},
		{"a pipe name with a backslash is rejected", `\\.\pipe\a\b`, ReasonPipeName},
		{"a pipe name with a slash is rejected", "//./pipe/a/b", ReasonPipeName},
		{"a pipe name with a control character is rejected", "\\\\.\\pipe\\a\x01b", ReasonPipeName},
		{"a pipe over 256 characters is rejected", `\\.\pipe\` + strings.Repeat("p", 248), ReasonPipeName},
		{"an empty bridge id is rejected", "bridge:", ReasonBridgeID},
		{"a bridge id with a dot is rejected", "bridge:a.b", ReasonBridgeID},
		{"a bridge id over 128 characters is rejected", "bridge:" + strings.Repeat("x", 129), ReasonBridgeID},
		{"a did without a method is rejected", "did::x", ReasonDIDMethod},
		{"a did with an uppercase method is rejected", "did:Web:x", ReasonDIDMethod},
		{"a did with only a method is rejected", "did:web", ReasonDIDID},
		{"a did with an empty id is rejected", "did:web:", ReasonDIDID},
		{"a did ending in a colon is rejected", "did:web:a:", ReasonDIDID},
		{"a did with a bad percent escape is rejected", "did:web:a%4", ReasonDIDID},
		{"a did with a non-hex percent escape is rejected", "did:web:a%zz", ReasonDIDID},
		{"a did with a slash is rejected", "did:web:a/b", ReasonDIDID},
		{"a bracketed ref of five digits is rejected", "[3f2a1]", ReasonRef},
		{"a bracketed ref in capitals is rejected", "[3F2A1C]", ReasonRef},
		{"an empty bracket is rejected", "work []", ReasonRef},
		{"a name with a bad ref is rejected", "work [zzzzzz]", ReasonRef},
		{"name: with nothing after is rejected", "name:", ReasonNameLength},
		{"name: with only a ref is rejected", "name:[3f2a1c]", ReasonNameLength},
		{"a name over 80 characters is rejected", strings.Repeat("n", 81), ReasonNameLength},
		{"a name of invalid UTF-8 is rejected", "work\xff", ReasonNameEncoding},
		{"a name with a quote is rejected", `say "hi"`, ReasonNameChar},
		{"a name with angle brackets is rejected", "a<b>", ReasonNameChar},
		{"a name with a stray bracket is rejected", "a]b", ReasonNameChar},
		{"a name ending in a bracket with no opening is rejected", "ab]", ReasonNameChar},
		{"text after a ref is rejected", "work [3f2a1c] x", ReasonNameChar},
		{"a name with a tab is rejected", "a\tb", ReasonNameChar},
		{"a name with a newline is rejected", "a\nb", ReasonNameChar},
		{"a name with a bidi override is rejected", "work\u202eexe", ReasonNameChar},
		{"a forced name with a leading space is rejected", "name: work", ReasonNameSpace},
		{"a forced name that is another forced name is rejected", "name:name:x", ReasonNamePrefix},
		{"a name starting with a backslash is rejected", `\work`, ReasonNamePrefix},
		{"a forced name that looks like an address is rejected", "name:uds:/x", ReasonNamePrefix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Parse(tt.in)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) = %#v, %v; want a *ParseError", tt.in, a, err)
			}
			if pe.Reason != tt.want || pe.Input != tt.in {
				t.Fatalf("Parse(%q) failed with %v on %q, want %v", tt.in, pe.Reason, pe.Input, tt.want)
			}
			if a != (Address{}) {
				t.Fatalf("a failed Parse returned %#v, want the zero Address", a)
			}
		})
	}
}

func TestParseErrorMessage(t *testing.T) {
	t.Run("the message quotes the input and says what is allowed", func(t *testing.T) {
		_, err := Parse("bridge:a.b")
		want := `invalid address "bridge:a.b": a bridge id is 1 to 128 of A-Z a-z 0-9 _ -`
		if err == nil || err.Error() != want {
			t.Fatalf("got %v, want %s", err, want)
		}
	})
	t.Run("a long input is clipped in the message", func(t *testing.T) {
		_, err := Parse(strings.Repeat("x", 3000))
		if err == nil || len(err.Error()) > 300 {
			t.Fatalf("got %v, want a short message", err)
		}
	})
}

func TestParseReasonsAreAllSpelled(t *testing.T) {
	seen := map[string]bool{}
	for r := ReasonEmpty; int(r) < len(parseReasons); r++ {
		w := r.String()
		if w == "" || r.text() == "" || strings.HasPrefix(w, "ParseReason(") {
			t.Errorf("reason %d has no wire spelling or text", r)
		}
		if seen[w] {
			t.Errorf("wire spelling %q is used twice", w)
		}
		seen[w] = true
	}
	if got := ParseReason(0).String(); got != "ParseReason(0)" {
		t.Errorf("the zero reason prints %q", got)
	}
}

func TestKindString(t *testing.T) {
	tests := []struct {
		k    Kind
		want string
	}{
		{KindUDS, "uds"}, {KindPipe, "pipe"}, {KindBridge, "bridge"},
		{KindDID, "did"}, {KindName, "name"}, {KindRef, "ref"},
		{0, "Kind(0)"}, {KindRef + 1, "Kind(7)"},
	}
	for _, tt := range tests {
		if got := tt.k.String(); got != tt.want {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(tt.k), got, tt.want)
		}
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		name string
		a    Address
		want string
	}{
		{"the zero address prints as nothing", Address{}, ""},
		{"a hex name without a ref is forced", Address{Kind: KindName, Name: "abcdef"}, "name:abcdef"},
		{"a hex name with a ref needs no force", Address{Kind: KindName, Name: "abcdef", Ref: "012345"}, "abcdef [012345]"},
		{"a ref prints bracketed", Address{Kind: KindRef, Ref: "012345"}, "[012345]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.String(); got != tt.want {
				t.Fatalf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWireSafe(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"a cc-socks path is wire safe", "uds:/tmp/cc-socks/4242.sock", true},
		{"a bridge id is wire safe", "bridge:session_01AbC-9", true},
		{"a did with escapes is wire safe", "did:web:a%3Ab", true},
		{"a path with a space is wire safe once encoded", "uds:/tmp/my socks/1.sock", true},
		{"a path with non-ASCII is wire safe once encoded", "uds:/tmp/é.sock", true},
		{"a path with a percent sign is wire safe once encoded", "uds:/tmp/50%25/1.sock", true},
		{"a path with a backslash is not wire safe (Claude Code leaves it unencoded)", `uds:/tmp/a\b.sock`, false},
		{"a pipe is not wire safe", `\\.\pipe\x`, false},
		{"a name with a ref is not wire safe", "work [3f2a1c]", false},
		{"a uds address of 300 bytes is wire safe", "uds:/" + strings.Repeat("a", 295), true},
		{"a did over 300 bytes is not wire safe", "did:x:" + strings.Repeat("a", 295), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.WireSafe(); got != tt.want {
				t.Fatalf("WireSafe(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
	t.Run("the zero address is not wire safe", func(t *testing.T) {
		if (Address{}).WireSafe() {
			t.Fatal("zero Address is wire safe")
		}
	})
}

func TestDialable(t *testing.T) {
	tests := []struct {
		name string
		in   string
		goos string
		want error
	}{
		{"a uds address is dialable", "uds:/tmp/a.sock", "linux", nil},
		{"a bridge address is dialable", "bridge:abc", "linux", nil},
		{"a pipe is dialable on windows", `\\.\pipe\x`, "windows", nil},
		{"a pipe is unsupported on linux", `\\.\pipe\x`, "linux", ErrUnsupported},
		{"a pipe is unsupported on darwin", `\\.\pipe\x`, "darwin", ErrUnsupported},
		{"a name must be resolved first", "work", "linux", ErrNotDialable},
		{"a ref must be resolved first", "[3f2a1c]", "linux", ErrNotDialable},
		{"a did must be resolved first", "did:web:x", "linux", ErrNotDialable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.dialable(tt.goos); got != tt.want {
				t.Fatalf("dialable(%q) = %v, want %v", tt.goos, got, tt.want)
			}
		})
	}
	t.Run("ErrUnsupported matches errors.ErrUnsupported", func(t *testing.T) {
		if !errors.Is(ErrUnsupported, errors.ErrUnsupported) {
			t.Fatal("it does not")
		}
	})
}

func TestRef(t *testing.T) {
	// sha256("abc") = ba7816bf...
	if got := Ref("abc"); got != "ba7816" {
		t.Fatalf(`Ref("abc") = %q, want "ba7816"`, got)
	}
	if got := Ref("3c7e1d0a-5b7f-4a39-9a55-0f4f7b8c9d01"); !isRef(got) {
		t.Fatalf("Ref gave %q, not 6 lowercase hex digits", got)
	}
}
