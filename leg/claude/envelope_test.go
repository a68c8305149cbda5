package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

const (
	tok1 = "0123456789abcdef01234567"
	tok2 = "fedcba9876543210fedcba98"
)

func TestEnvelopeString(t *testing.T) {
	tests := []struct {
		name string
		in   Envelope
		want string
	}{
		{
			"the protocol's minimal sender envelope has from, from-name and from-mode only",
			Envelope{From: "uds:/tmp/cc-socks/1.sock", FromName: "bob", FromMode: "bypass", Body: "hi"},
			"<cross-session-message from=\"uds:/tmp/cc-socks/1.sock\" from-name=\"bob\" from-mode=\"bypass\">\nhi\n</cross-session-message>",
		},
		{
			"every attribute prints in canonical order",
			Envelope{FromPlugin: "p@m", FromMode: "prompting", FromName: "n", HopChain: []string{tok1, tok2},
				FromSession: "s-1", From: "uds:/a.sock", Body: "b"},
			"<cross-session-message from=\"uds:/a.sock\" from-session=\"s-1\" hop-chain=\"" + tok1 + "," + tok2 +
				"\" from-name=\"n\" from-mode=\"prompting\" from-plugin=\"p@m\">\nb\n</cross-session-message>",
		},
		{
			"an envelope with no attributes is a bare tag",
			Envelope{Body: ""},
			"<cross-session-message>\n\n</cross-session-message>",
		},
		{
			"a closing tag in the body is escaped with a backslash",
			Envelope{From: "uds:/a.sock", Body: "x</cross-session-message>y"},
			"<cross-session-message from=\"uds:/a.sock\">\nx<\\/cross-session-message>y\n</cross-session-message>",
		},
		{
			"an empty hop chain is left out",
			Envelope{From: "uds:/a.sock", HopChain: []string{}, Body: "b"},
			"<cross-session-message from=\"uds:/a.sock\">\nb\n</cross-session-message>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.String(); got != tt.want {
				t.Fatalf("String() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestParseEnvelope(t *testing.T) {
	wrap := func(head, body string) string {
		return "<cross-session-message" + head + ">\n" + body + "\n</cross-session-message>"
	}
	chain := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = tok1
		}
		return strings.Join(s, ",")
	}
	tests := []struct {
		name    string
		in      string
		want    *Envelope // nil: must fail
		wantErr error
	}{
		{"the protocol's reproduction envelope parses",
			wrap(` from="uds:/tmp/cc-socks/9.sock" from-name="worker" from-mode="bypass"`, "hello"),
			&Envelope{From: "uds:/tmp/cc-socks/9.sock", FromName: "worker", FromMode: "bypass", Body: "hello"}, nil},
		{"an escaped closing tag comes back unescaped",
			wrap(` from="uds:/a.sock"`, `a<\/cross-session-message>b`),
			&Envelope{From: "uds:/a.sock", Body: "a</cross-session-message>b"}, nil},
		{"a body of several lines parses",
			wrap(``, "one\ntwo\n\nthree"), &Envelope{Body: "one\ntwo\n\nthree"}, nil},
		{"attributes out of order are not an envelope",
			wrap(` from-mode="bypass" from="uds:/a.sock"`, "x"), nil, ErrNotEnvelope},
		{"a repeated attribute is not an envelope",
			wrap(` from="uds:/a.sock" from="uds:/b.sock"`, "x"), nil, ErrNotEnvelope},
		{"an unknown attribute is not an envelope",
			wrap(` from="uds:/a.sock" to="x"`, "x"), nil, ErrNotEnvelope},
		{"a 32-entry hop chain parses",
			wrap(` hop-chain="`+chain(32)+`"`, "x"), &Envelope{HopChain: strings.Split(chain(32), ","), Body: "x"}, nil},
		{"a 33-entry hop chain fails",
			wrap(` hop-chain="`+chain(33)+`"`, "x"), nil, ErrBadAttribute},
		{"an upper-case hop token fails",
			wrap(` hop-chain="`+strings.ToUpper(tok2)+`"`, "x"), nil, ErrBadAttribute},
		{"a from-name with a quote cannot even be framed",
			wrap(` from-name="a"b"`, "x"), nil, ErrNotEnvelope},
		{"a from-name with an angle bracket fails",
			wrap(` from-name="a<b"`, "x"), nil, ErrBadAttribute},
		{"a from-name with a leading space fails its round trip through the name normaliser",
			wrap(` from-name=" bob"`, "x"), nil, ErrBadAttribute},
		{"a from-name of 65 characters fails",
			wrap(` from-name="`+strings.Repeat("n", 65)+`"`, "x"), nil, ErrBadAttribute},
		{"a from-name of 64 emoji parses",
			wrap(` from-name="`+strings.Repeat("😀", 64)+`"`, "x"),
			&Envelope{FromName: strings.Repeat("😀", 64), Body: "x"}, nil},
		{"a from-mode outside bypass and prompting fails",
			wrap(` from-mode="acceptEdits"`, "x"), nil, ErrBadAttribute},
		{"a from longer than 300 characters fails",
			wrap(` from="`+strings.Repeat("a", 301)+`"`, "x"), nil, ErrBadAttribute},
		{"a from with a backslash parses, as Claude Code's class allows",
			wrap(` from="uds:C:\pipe"`, "x"), &Envelope{From: `uds:C:\pipe`, Body: "x"}, nil},
		{"a from-session of 81 characters fails",
			wrap(` from-session="`+strings.Repeat("s", 81)+`"`, "x"), nil, ErrBadAttribute},
		{"an empty attribute fails",
			wrap(` from=""`, "x"), nil, ErrBadAttribute},
		{"an unescaped closing tag in the body is not canonical",
			wrap(``, "a\n</cross-session-message>\nb"), nil, ErrNotCanonical},
		{"an upper-case closing tag in the body is not canonical",
			wrap(``, "</CROSS-SESSION-MESSAGE>"), nil, ErrNotCanonical},
		{"a fullwidth closing tag in the body is not canonical",
			wrap(``, "＜/cross-session-message>"), nil, ErrNotCanonical},
		{"a closing tag with a zero-width space inside is not canonical",
			wrap(``, "</cross-\u200bsession-message>"), nil, ErrNotCanonical},
		{"a missing newline after the opening tag is not an envelope",
			"<cross-session-message>x\n</cross-session-message>", nil, ErrNotEnvelope},
		{"a single newline between the tags is not an envelope",
			"<cross-session-message>\n</cross-session-message>", nil, ErrNotEnvelope},
		{"a trailing newline is not an envelope",
			wrap(``, "x") + "\n", nil, ErrNotEnvelope},
		{"a space before the closing angle bracket is not an envelope",
			"<cross-session-message from=\"uds:/a.sock\" >\nx\n</cross-session-message>", nil, ErrNotEnvelope},
		{"another tag is not an envelope",
			"<cross-session-messages>\nx\n</cross-session-message>", nil, ErrNotEnvelope},
		{"invalid UTF-8 fails",
			wrap(``, "\xff"), nil, ErrInvalidUTF8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEnvelope(tt.in)
			if tt.want == nil {
				if err == nil {
					t.Fatalf("parsed %+v, want error %v", got, tt.wantErr)
				}
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				if c := ParseContent(tt.in); c.Attested || c.Envelope.Body != tt.in || c.Raw != tt.in {
					t.Fatalf("ParseContent = %+v, want an opaque body", c)
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v", err)
			}
			if !envEqual(got, *tt.want) {
				t.Fatalf("parsed %+v, want %+v", got, *tt.want)
			}
			if c := ParseContent(tt.in); !c.Attested || !envEqual(c.Envelope, *tt.want) || c.Raw != tt.in {
				t.Fatalf("ParseContent = %+v, want attested %+v", c, *tt.want)
			}
		})
	}
}

func TestEnvelopeValidate(t *testing.T) {
	tests := []struct {
		name string
		in   Envelope
		attr string // "" for valid; "body" for ErrInvalidUTF8
	}{
		{"the zero envelope is valid", Envelope{}, ""},
		{"a full envelope is valid", Envelope{From: "uds:/tmp/cc-socks/1.sock", FromSession: "abc_1-2",
			HopChain: []string{tok1}, FromName: "Bob the builder", FromMode: "prompting", FromPlugin: "p@m~1"}, ""},
		{"a from with a space is invalid", Envelope{From: "uds:/a b"}, "from"},
		{"a from of exactly 300 characters is valid", Envelope{From: strings.Repeat("a", 300)}, ""},
		{"a session id with a dot is invalid", Envelope{FromSession: "a.b"}, "from-session"},
		{"a hop chain of 33 entries is invalid", Envelope{HopChain: slices.Repeat([]string{tok1}, 33)}, "hop-chain"},
		{"a hop token of 23 characters is invalid", Envelope{HopChain: []string{tok1[:23]}}, "hop-chain"},
		{"a name with a quote is invalid", Envelope{FromName: `say "hi"`}, "from-name"},
		{"a name with a zero-width space is invalid", Envelope{FromName: "a\u200bb"}, "from-name"},
		{"a name with a tab is invalid", Envelope{FromName: "a\tb"}, "from-name"},
		{"a name ending in an ideographic space is invalid", Envelope{FromName: "ab\u3000"}, "from-name"},
		{"a name with an inner no-break space is valid", Envelope{FromName: "a\u00a0b"}, ""},
		{"a name with a fullwidth angle bracket is valid on the wire", Envelope{FromName: "＜a＞"}, ""},
		{"an upper-case mode is invalid", Envelope{FromMode: "Bypass"}, "from-mode"},
		{"a plugin with a space is invalid", Envelope{FromPlugin: "a b"}, "from-plugin"},
		{"a plugin of 65 characters is invalid", Envelope{FromPlugin: strings.Repeat("p", 65)}, "from-plugin"},
		{"a body with invalid UTF-8 is invalid", Envelope{Body: "\xc3"}, "body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.in.Validate()
			var ae *AttrError
			switch {
			case tt.attr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.attr == "body" && !errors.Is(err, ErrInvalidUTF8):
				t.Fatalf("Validate() = %v, want ErrInvalidUTF8", err)
			case tt.attr != "" && tt.attr != "body" && (!errors.As(err, &ae) || ae.Attr != tt.attr):
				t.Fatalf("Validate() = %v, want an error about %s", err, tt.attr)
			}
			if err == nil {
				// Whatever validates must survive its own round trip.
				got, perr := ParseEnvelope(tt.in.String())
				if perr != nil || !envEqual(got, tt.in) {
					t.Fatalf("round trip gave %+v, %v", got, perr)
				}
			}
		})
	}
}

func TestSanitizeName(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"a plain name is kept", "worker-1", "worker-1"},
		{"quotes and angle brackets are stripped", `<b>"Bob"</b>`, "bBob/b"},
		{"fullwidth and other lookalike brackets and quotes are stripped", "＜Bob＞‹x›《y》＂z＂", "Bobxyz"},
		{"zero-width and bidi characters are dropped", "B\u200bo\u200db\u202e\ufeff", "Bob"},
		{"control characters are dropped", "B\x00o\x7fb", "Bob"},
		{"runs of white space become one space and the ends are trimmed", " \t Bob \n\u3000 the\u00a0builder  ", "Bob the builder"},
		{"a long name is cut to 64 characters ending in an ellipsis", strings.Repeat("ab", 40), strings.Repeat("ab", 31) + "a…"},
		{"a name of exactly 64 characters is kept", strings.Repeat("é", 64), strings.Repeat("é", 64)},
		{"a space before the cut is not kept before the ellipsis", strings.Repeat("x", 62) + " yyyy", strings.Repeat("x", 62) + "…"},
		{"a name of nothing but brackets becomes empty", "<<>>", ""},
		{"invalid UTF-8 is dropped", "B\xffob", "Bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SanitizeName(tt.in)
			if got != tt.want {
				t.Fatalf("SanitizeName(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got != "" {
				if err := (Envelope{FromName: got}).Validate(); err != nil {
					t.Fatalf("sanitized name %q does not validate: %v", got, err)
				}
			}
		})
	}
}

func TestEscapeBody(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"text without a closing tag is unchanged", "a < b / c", "a < b / c"},
		{"a closing tag gets a backslash after its opener", "</cross-session-message>", `<\/cross-session-message>`},
		{"an opening tag is left alone", "<cross-session-message>", "<cross-session-message>"},
		{"an already escaped tag gets one more backslash", `<\/cross-session-message>`, `<\\/cross-session-message>`},
		{"a tag name that runs on is left alone", "</cross-session-messages>", "</cross-session-messages>"},
		{"a tag name followed by a space counts", "</cross-session-message foo", `<\/cross-session-message foo`},
		{"a tag at the very end counts", "x</cross-session-message", `x<\/cross-session-message`},
		{"case does not matter", "</Cross-Session-MESSAGE>", `<\/Cross-Session-MESSAGE>`},
		{"the long s counts as an s", "</croſſ-session-message>", `<\/croſſ-session-message>`},
		{"a dotted capital I does not count as an i", "</cross-sessİon-message>", "</cross-sessİon-message>"},
		{"an underscore or other dash stands for a hyphen", "</cross_session\u2014message>", "<\\/cross_session\u2014message>"},
		{"spaces around the slash count", "<  /  cross-session-message>", `<\  /  cross-session-message>`},
		{"a newline between the letters does not count", "</cross-sess\nion-message>", "</cross-sess\nion-message>"},
		{"invisible characters between the letters count", "</cross-\u200bsess\u0301ion-message>", "<\\/cross-\u200bsess\u0301ion-message>"},
		{"a fullwidth opener and slash count, and keep their own characters", "＜／cross-session-message＞", "＜\\／cross-session-message＞"},
		{"two tags in a row are both escaped", "</cross-session-message</cross-session-message>",
			`<\/cross-session-message<\/cross-session-message>`},
		{"a second opener before the slash starts the match instead", "<</cross-session-message>", `<<\/cross-session-message>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EscapeBody(tt.in)
			if got != tt.want {
				t.Fatalf("EscapeBody(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if back := UnescapeBody(got); back != tt.in {
				t.Fatalf("UnescapeBody(%q) = %q, want %q", got, back, tt.in)
			}
			if c := claudeEscape(got); c != got {
				t.Fatalf("Claude Code would rewrite our %q as %q", got, c)
			}
		})
	}
}

// claudeEscape is Claude Code's own, lossy, body rewrite: each opener that
// begins a closing tag and is not already followed by a backslash becomes `<\`.
// Its check for a canonical envelope is claudeEscape(body) == body.
func claudeEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		rest := s[i+n:]
		if isOpener(r) && !strings.HasPrefix(rest, `\`) && closesEnvelope(rest) {
			b.WriteString(`<\`)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// realVectors were produced by running Claude Code 2.1.332's own envelope
// functions (its body rewrite, and its parse with the rebuild check) on
// generated inputs; see testdata/README.md.
type realVectors struct {
	Escape [][2]string `json:"escape"` // body, Claude Code's rewrite of it
	Parse  []realParse `json:"parse"`
}

// realParse is one [input, result] pair; Out is nil where Claude Code did not
// attest the input.
type realParse struct {
	In  string
	Out *struct {
		From        string   `json:"from"`
		FromSession string   `json:"fromSession"`
		HopChain    []string `json:"hopChain"`
		FromName    string   `json:"fromName"`
		FromMode    string   `json:"fromMode"`
		FromPlugin  string   `json:"fromPlugin"`
		Body        string   `json:"body"` // as on the wire, escaped
	}
}

func (p *realParse) UnmarshalJSON(b []byte) error {
	var pair [2]json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil {
		return err
	}
	if err := json.Unmarshal(pair[0], &p.In); err != nil {
		return err
	}
	return json.Unmarshal(pair[1], &p.Out)
}

func loadVectors(t *testing.T) realVectors {
	t.Helper()
	path := "testdata/realjs_vectors.json"
	if p := os.Getenv("CLAUDE_ENVELOPE_VECTORS"); p != "" {
		path = p // a larger set, generated the same way
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v realVectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Escape) == 0 || len(v.Parse) == 0 {
		t.Fatalf("%s holds no vectors", path)
	}
	return v
}

func TestEscapeMatchesClaudeCode(t *testing.T) {
	v := loadVectors(t)
	for i, e := range v.Escape {
		in, want := e[0], e[1]
		if got := claudeEscape(in); got != want {
			t.Fatalf("vector %d: our matcher rewrites %q as %q; Claude Code gives %q", i, in, got, want)
		}
		// What Claude Code prints, we read back and print identically.
		if got := EscapeBody(UnescapeBody(want)); got != want {
			t.Fatalf("vector %d: Claude Code's body %q does not survive our round trip: %q", i, want, got)
		}
		// What we print, Claude Code leaves alone.
		if ours := EscapeBody(in); claudeEscape(ours) != ours {
			t.Fatalf("vector %d: Claude Code would rewrite our body %q", i, ours)
		}
	}
}

func TestParseMatchesClaudeCode(t *testing.T) {
	v := loadVectors(t)
	for i, p := range v.Parse {
		got, err := ParseEnvelope(p.In)
		if p.Out == nil {
			if err == nil {
				t.Fatalf("vector %d: we attest %q, Claude Code does not", i, p.In)
			}
			continue
		}
		if err != nil {
			// Known, deliberate narrowing: from is capped at 300 characters and
			// from-plugin limited to a plugin id.
			if len(p.Out.From) > MaxFromLen || (p.Out.FromPlugin != "" && (Envelope{FromPlugin: p.Out.FromPlugin}).Validate() != nil) {
				continue
			}
			t.Fatalf("vector %d: Claude Code attests %q, we do not: %v", i, p.In, err)
		}
		want := Envelope{From: p.Out.From, FromSession: p.Out.FromSession, HopChain: p.Out.HopChain,
			FromName: p.Out.FromName, FromMode: p.Out.FromMode, FromPlugin: p.Out.FromPlugin, Body: got.Body}
		if !envEqual(got, want) {
			t.Fatalf("vector %d: we parse %+v, Claude Code %+v", i, got, want)
		}
		if EscapeBody(got.Body) != p.Out.Body {
			t.Fatalf("vector %d: our body %q escapes to %q, Claude Code's body is %q", i, got.Body, EscapeBody(got.Body), p.Out.Body)
		}
	}
}

func envEqual(a, b Envelope) bool {
	return a.From == b.From && a.FromSession == b.FromSession && slices.Equal(a.HopChain, b.HopChain) &&
		a.FromName == b.FromName && a.FromMode == b.FromMode && a.FromPlugin == b.FromPlugin && a.Body == b.Body
}

// TestMatcherClassesMatchClaudeCode puts every code point, one at a time, in
// each position of a closing tag and checks that our matcher and Claude Code's
// agree on whether the tag still counts. testdata/realjs_classes.json lists,
// per position, the code points for which Claude Code's rewrite escaped the
// leading opener ("lead") or changed the body some other way ("other").
func TestMatcherClassesMatchClaudeCode(t *testing.T) {
	b, err := os.ReadFile("testdata/realjs_classes.json")
	if err != nil {
		t.Fatal(err)
	}
	var classes map[string]struct{ Lead, Other runeSet }
	if err := json.Unmarshal(b, &classes); err != nil {
		t.Fatal(err)
	}
	const tag = "cross-session-message"
	slots := map[string]func(c string) string{
		"opener":         func(c string) string { return c + "/" + tag + ">" },
		"beforeSlash":    func(c string) string { return "<" + c + "/" + tag + ">" },
		"slash":          func(c string) string { return "<" + c + tag + ">" },
		"afterSlash":     func(c string) string { return "</" + c + tag + ">" },
		"betweenLetters": func(c string) string { return "</c" + c + "ross-session-message>" },
		"dash":           func(c string) string { return "</cross" + c + "session-message>" },
		"tail":           func(c string) string { return "</" + tag + c },
	}
	for _, l := range "crosenmaig" {
		i := strings.IndexRune(tag, l)
		slots["letter_"+string(l)] = func(c string) string { return "</" + tag[:i] + c + tag[i+1:] + ">" }
	}
	if len(classes) != len(slots) {
		t.Fatalf("%d classes in testdata, %d slots here", len(classes), len(slots))
	}
	for name, build := range slots {
		want, ok := classes[name]
		if !ok {
			t.Fatalf("no class for %s", name)
		}
		t.Run("the "+name+" position agrees for every code point", func(t *testing.T) {
			t.Parallel()
			for r := rune(0); r <= unicode.MaxRune; r = nextRune(r) {
				body := build(string(r))
				lead, other := escapeClass(body)
				if lead != want.Lead.contains(r) || other != want.Other.contains(r) {
					t.Fatalf("U+%04X in %s: we say lead=%v other=%v, Claude Code lead=%v other=%v",
						r, name, lead, other, want.Lead.contains(r), want.Other.contains(r))
				}
			}
		})
	}
}

// escapeClass says whether claudeEscape would rewrite only the leading opener
// (lead) or change body in any other way (other), without building the result.
func escapeClass(body string) (lead, other bool) {
	first := true
	for i := 0; i < len(body); {
		r, n := utf8.DecodeRuneInString(body[i:])
		rest := body[i+n:]
		if isOpener(r) && !strings.HasPrefix(rest, `\`) && closesEnvelope(rest) {
			if first && r == '<' {
				// Claude Code writes `<\` for "<": a change only in that a
				// backslash appears; for a lookalike the opener changes too.
				lead = true
			} else if first {
				lead = true
			} else {
				other = true
			}
		}
		first = false
		i += n
	}
	return lead && !other, other
}

// UnmarshalJSON reads [[lo, hi], ...] as written by the vector generator.
func (s *runeSet) UnmarshalJSON(b []byte) error {
	var pairs [][2]rune
	if err := json.Unmarshal(b, &pairs); err != nil {
		return err
	}
	var flat []rune
	for _, p := range pairs {
		flat = append(flat, p[0], p[1])
	}
	*s = newRuneSet(flat...)
	return nil
}

// TestNameGrammarMatchesClaudeCode puts every code point in the middle, at the
// start and at the end of a from-name and checks that we refuse exactly the
// names Claude Code's parser or name normaliser would not leave unchanged
// (testdata/realjs_names.json lists the refused code points per position).
func TestNameGrammarMatchesClaudeCode(t *testing.T) {
	b, err := os.ReadFile("testdata/realjs_names.json")
	if err != nil {
		t.Fatal(err)
	}
	var bad map[string]runeSet
	if err := json.Unmarshal(b, &bad); err != nil {
		t.Fatal(err)
	}
	slots := map[string]func(c string) string{
		"middle": func(c string) string { return "a" + c + "b" },
		"start":  func(c string) string { return c + "ab" },
		"end":    func(c string) string { return "ab" + c },
	}
	for name, build := range slots {
		t.Run("a code point in the "+name+" of a name is refused exactly when Claude Code refuses it", func(t *testing.T) {
			t.Parallel()
			var diffs []string
			for r := rune(0); r <= unicode.MaxRune; r = nextRune(r) {
				weRefuse := checkName(build(string(r))) != ""
				if weRefuse != bad[name].contains(r) {
					diffs = append(diffs, fmt.Sprintf("U+%04X (we refuse: %v)", r, weRefuse))
				}
			}
			if len(diffs) > 0 {
				t.Fatalf("%d code points differ: %v", len(diffs), diffs[:min(len(diffs), 20)])
			}
		})
	}
}

// nextRune steps through every code point but the surrogates. With -short it
// samples planes 3 to 13 and 15 to 16, which hold no assigned characters
// (only private use) and on which both engines agree.
func nextRune(r rune) rune {
	r++
	if r == 0xD800 {
		r = 0xE000
	}
	if testing.Short() && (r >= 0x30000 && r < 0xE0000 || r >= 0xF0000) {
		r += 96
	}
	return r
}
