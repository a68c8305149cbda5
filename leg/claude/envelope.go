package claude

import (
	"errors"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sessiongateway/gateway/message"
)

// The envelope is the text a user frame carries as message.content:
//
//	<cross-session-message from="uds:..." from-session="..." hop-chain="..." from-name="..." from-mode="..." from-plugin="...">
//	BODY
//	</cross-session-message>
//
// Claude Code 2.1.332 parses it with one anchored pattern (attributes optional
// but only in this order), rebuilds it from what it parsed, and treats it as
// attested only when the rebuild equals the input byte for byte. ParseEnvelope
// does the same, so whatever Claude Code attests we attest, and the reverse.
const (
	envelopeTag   = "cross-session-message"
	envelopeOpen  = "<" + envelopeTag
	envelopeClose = "\n</" + envelopeTag + ">"
)

// Grammar limits (docs/protocols/claude-peer-socket.md#envelope): Claude
// Code 2.1.332's, as it behaves.
const (
	MaxFromLen    = 300 // bytes of from; the charset is ASCII
	MaxSessionLen = 80  // from-session
	// MaxNameRunes caps from-name and from-plugin. Older notes say 80, but Claude
	// Code rebuilds these attributes through a normaliser that cuts anything
	// longer than 64 code points (and appends "…"), so a longer value never
	// round-trips and the whole envelope falls back to unattested.
	MaxNameRunes = 64
)

// Envelope is one parsed or to-be-printed cross-session-message. Body is the
// text as the sender meant it: String escapes closing tags and ParseEnvelope
// unescapes them (see EscapeBody).
type Envelope struct {
	From        string   // sender address, "uds:..." or "bridge:..."
	FromSession string   // sender's session id
	HopChain    []string // hop tokens, oldest first
	FromName    string   // sender's display name (a claim, not an identity)
	FromMode    string   // "bypass" or "prompting"; empty when not attested
	FromPlugin  string   // plugin the sender speaks for
	Body        string
}

// Errors from Validate and ParseEnvelope. ParseEnvelope's errors all mean the
// same to a receiver: the content is an opaque, unattested body.
var (
	// ErrNotEnvelope: the text does not have the envelope's shape at all
	// (wrong tag, attributes out of order or unknown, missing newlines).
	ErrNotEnvelope = errors.New("not a cross-session-message envelope")
	// ErrNotCanonical: the text parses, but printing what was parsed does not
	// give the same text back (an unescaped closing tag in the body, say).
	ErrNotCanonical = errors.New("cross-session-message is not in canonical form")
	// ErrBadAttribute is what every *AttrError matches with errors.Is.
	ErrBadAttribute = errors.New("cross-session-message attribute breaks its grammar")
	// ErrInvalidUTF8: the text, or one of its parts, is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
)

// AttrError names the attribute that broke its grammar, and how.
type AttrError struct {
	Attr   string // wire name: "from", "hop-chain", ...
	Reason string
}

func (e *AttrError) Error() string { return "cross-session-message " + e.Attr + ": " + e.Reason }

// Is lets errors.Is(err, ErrBadAttribute) match any *AttrError.
func (e *AttrError) Is(target error) bool { return target == ErrBadAttribute }

// Mode returns FromMode as a message.Mode; ModeUnknown when absent.
func (e Envelope) Mode() message.Mode {
	m, _ := message.ParseMode(e.FromMode)
	return m
}

// Validate checks every attribute against the grammar Claude Code parses and
// rebuilds, so an envelope that validates prints to text Claude Code attests:
//
//   - from: 1..300 of [A-Za-z0-9%:_/.\-] and the backslash (Claude Code's own
//     character class includes it, for Windows pipe names);
//   - from-session: [A-Za-z0-9_-]{1,80};
//   - hop-chain: 1..32 entries of 24 lower-case hex;
//   - from-name: 1..64 code points; no " < >, no control, format, line or
//     paragraph separator characters (Cc Cf Zl Zp), and no space separator
//     (Zs) at either end: exactly the values Claude Code's name normaliser
//     leaves unchanged;
//   - from-mode: bypass or prompting;
//   - from-plugin: [A-Za-z0-9@/._:~-]{1,64}, a plugin id; narrower than what
//     Claude Code accepts, on purpose.
//
// Empty attributes are left out when printed, so empty is always valid. The
// body may hold anything that is valid UTF-8.
func (e Envelope) Validate() error {
	if e.From != "" {
		if len(e.From) > MaxFromLen {
			return &AttrError{"from", "longer than 300 characters"}
		}
		if !allBytes(e.From, isFromByte) {
			return &AttrError{"from", `holds a character outside [A-Za-z0-9%:_/.\-]`}
		}
	}
	if e.FromSession != "" {
		if len(e.FromSession) > MaxSessionLen {
			return &AttrError{"from-session", "longer than 80 characters"}
		}
		if !allBytes(e.FromSession, isSessionByte) {
			return &AttrError{"from-session", "holds a character outside [A-Za-z0-9_-]"}
		}
	}
	if len(e.HopChain) > message.MaxHopChain {
		return &AttrError{"hop-chain", "more than 32 entries"}
	}
	for _, h := range e.HopChain {
		if !message.IsHopToken(h) {
			return &AttrError{"hop-chain", "an entry is not 24 lower-case hex characters"}
		}
	}
	if e.FromName != "" {
		if reason := checkName(e.FromName); reason != "" {
			return &AttrError{"from-name", reason}
		}
	}
	switch e.FromMode {
	case "", "bypass", "prompting":
	default:
		return &AttrError{"from-mode", "neither bypass nor prompting"}
	}
	if e.FromPlugin != "" {
		if len(e.FromPlugin) > MaxNameRunes || !allBytes(e.FromPlugin, isPluginByte) {
			return &AttrError{"from-plugin", "not 1..64 of [A-Za-z0-9@/._:~-]"}
		}
	}
	if !utf8.ValidString(e.Body) {
		return ErrInvalidUTF8
	}
	return nil
}

// String prints the canonical envelope: attributes in the order from,
// from-session, hop-chain, from-name, from-mode, from-plugin, each left out
// when empty; then a newline, the escaped body, a newline and the closing tag.
// It prints whatever it holds; call Validate first for text a peer will attest.
func (e Envelope) String() string {
	var b strings.Builder
	b.Grow(len(envelopeOpen) + len(e.From) + len(e.Body) + 64 + 25*len(e.HopChain))
	b.WriteString(envelopeOpen)
	attr := func(name, v string) {
		if v != "" {
			b.WriteString(" " + name + `="`)
			b.WriteString(v)
			b.WriteByte('"')
		}
	}
	attr("from", e.From)
	attr("from-session", e.FromSession)
	attr("hop-chain", strings.Join(e.HopChain, ","))
	attr("from-name", e.FromName)
	attr("from-mode", e.FromMode)
	attr("from-plugin", e.FromPlugin)
	b.WriteString(">\n")
	b.WriteString(EscapeBody(e.Body))
	b.WriteString(envelopeClose)
	return b.String()
}

// ParseEnvelope reads s strictly: the opening tag, then the attributes in
// canonical order (any may be absent, none may repeat or be empty), each
// checked by Validate's grammar, then ">\n", the body, "\n" and the closing
// tag at the very end. Last comes the round-trip check: printing the result
// must give s back exactly, else ErrNotCanonical.
func ParseEnvelope(s string) (Envelope, error) {
	var e Envelope
	if !utf8.ValidString(s) {
		return e, ErrInvalidUTF8
	}
	rest, ok := strings.CutPrefix(s, envelopeOpen)
	if !ok {
		return e, ErrNotEnvelope
	}
	var chain string
	for _, a := range []struct {
		name string
		dst  *string
	}{
		{"from", &e.From},
		{"from-session", &e.FromSession},
		{"hop-chain", &chain},
		{"from-name", &e.FromName},
		{"from-mode", &e.FromMode},
		{"from-plugin", &e.FromPlugin},
	} {
		after, ok := strings.CutPrefix(rest, " "+a.name+`="`)
		if !ok {
			continue
		}
		v, after, ok := strings.Cut(after, `"`)
		if !ok {
			return Envelope{}, ErrNotEnvelope
		}
		if v == "" {
			return Envelope{}, &AttrError{a.name, "empty"}
		}
		*a.dst, rest = v, after
	}
	if chain != "" {
		e.HopChain = strings.Split(chain, ",")
	}
	rest, ok = strings.CutPrefix(rest, ">\n")
	if !ok {
		return Envelope{}, ErrNotEnvelope
	}
	body, ok := strings.CutSuffix(rest, envelopeClose)
	if !ok {
		return Envelope{}, ErrNotEnvelope
	}
	e.Body = UnescapeBody(body)
	if err := e.Validate(); err != nil {
		return Envelope{}, err
	}
	if e.String() != s {
		return Envelope{}, ErrNotCanonical
	}
	return e, nil
}

// Content is a user frame's message.content as a receiver sees it.
type Content struct {
	Envelope Envelope // parsed; when not Attested, only Body is set (to Raw)
	Attested bool     // ParseEnvelope accepted Raw
	Raw      string   // the content exactly as received
}

// ParseContent never fails: content that is not a canonical envelope is an
// opaque body from an unattested sender, tags and all.
func ParseContent(s string) Content {
	e, err := ParseEnvelope(s)
	if err != nil {
		return Content{Envelope: Envelope{Body: s}, Raw: s}
	}
	return Content{Envelope: e, Attested: true, Raw: s}
}

// SanitizeName is what a sender does to a display name before it goes into
// from-name. It removes " < > and the characters Claude Code treats as
// lookalikes of < and > (fullwidth ＜ ＞, ‹ ›, 〈 〉, 《 》 and the like) and the
// fullwidth quote ＂; drops control, format (zero-width joiners and spaces,
// bidi controls) and other invisible characters; turns every run of white
// space into one space and trims the ends; drops bytes that are not UTF-8
// (and U+FFFD); and cuts the result to 64 code points, the last being "…" when
// it had to cut. The result is "" or a valid from-name.
func SanitizeName(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case r == utf8.RuneError, r == '"', r == '＂', isNameAngle(r):
			continue
		case unicode.IsSpace(r) || unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp):
			space = true
			continue
		case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Cs) || isInvisible(r):
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	out := b.String()
	if utf8.RuneCountInString(out) <= MaxNameRunes {
		return out
	}
	rs := []rune(out)[:MaxNameRunes-1]
	for len(rs) > 0 && rs[len(rs)-1] == ' ' {
		rs = rs[:len(rs)-1]
	}
	return string(append(rs, '…'))
}

// checkName returns why s is not a value Claude Code's name normaliser leaves
// unchanged, or "".
func checkName(s string) string {
	if !utf8.ValidString(s) {
		return "invalid UTF-8"
	}
	n := 0
	for _, r := range s {
		n++
		switch {
		case r == '"' || r == '<' || r == '>':
			return `holds " < or >`
		case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp):
			return "holds a control, format or separator character"
		}
	}
	if n > MaxNameRunes {
		return "longer than 64 characters"
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	if unicode.Is(unicode.Zs, first) || unicode.Is(unicode.Zs, last) {
		return "starts or ends with a space"
	}
	return ""
}

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isFromByte(c byte) bool {
	return isAlnum(c) || strings.IndexByte(`%:_/.\-`, c) >= 0
}

func isSessionByte(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }

func isPluginByte(c byte) bool { return isAlnum(c) || strings.IndexByte("@/._:~-", c) >= 0 }

// Body escaping.
//
// Claude Code neutralises every closing tag in a body before framing it: it
// finds each "<" (or lookalike) that begins something a reader could take for
// </cross-session-message — any case, lookalike slashes, filler characters
// around the slash, invisible characters between the letters, any dash or
// underscore for the hyphens — and, unless a backslash already follows it,
// replaces it with `<\`. So "</cross-session-message>" becomes
// `<\/cross-session-message>`. Its check for a canonical envelope is that the
// body is left unchanged by that rewrite.
//
// That rewrite cannot be undone (a body that already held `<\/cross-...` is
// left alone), so EscapeBody uses the same matcher with a reversible rule:
// after each opener that begins a closing tag it inserts one backslash, however
// many already follow. UnescapeBody removes one backslash after each such
// opener. The escaped bodies are exactly those where every such opener is
// followed by a backslash — the bodies Claude Code leaves unchanged — so each
// side attests what the other prints. The one difference a reader can see: a
// body that literally held `<\/cross-session-message>` arrives here from
// Claude Code as `</cross-session-message>`, and goes from here to Claude Code
// as `<\\/cross-session-message>`. A lookalike opener keeps its own character
// here, where Claude Code replaces it with "<"; both forms are canonical.

// EscapeBody inserts a backslash after every opener that begins a closing tag
// (see above). UnescapeBody(EscapeBody(s)) == s for every valid UTF-8 s.
func EscapeBody(s string) string {
	if !strings.ContainsFunc(s, isSlash) {
		return s // no slash, no closing tag
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if isOpener(r) && closesEnvelope(s[i:]) {
			if last == 0 {
				b.Grow(len(s) + 16)
			}
			b.WriteString(s[last:i])
			b.WriteByte('\\')
			last = i
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// UnescapeBody removes one backslash after every opener that begins a closing
// tag. It inverts EscapeBody; on a body EscapeBody could not have produced it
// still returns something, which then fails ParseEnvelope's round trip.
func UnescapeBody(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if isOpener(r) && strings.HasPrefix(s[i:], `\`) && closesEnvelope(s[i:]) {
			b.WriteString(s[last:i])
			last = i + 1
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// closesEnvelope reports whether s, the text right after an opener, continues
// a closing cross-session-message tag as Claude Code's matcher sees it:
// filler, a slash, filler, the tag name with invisible characters allowed
// between its letters, then the end or a character that cannot continue a
// name. Each run is taken greedily and never given back, as Claude Code's
// pattern does with its emulated atomic groups.
func closesEnvelope(s string) bool {
	i := skip(s, 0, func(r rune) bool { return isFiller(r) && !isSlash(r) })
	r, n := utf8.DecodeRuneInString(s[i:])
	if n == 0 || !isSlash(r) {
		return false
	}
	i = skip(s, i+n, isFiller)
	for k := 0; k < len(envelopeTag); k++ {
		if k > 0 {
			i = skip(s, i, isInvisible)
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if n == 0 {
			return false
		}
		if want := rune(envelopeTag[k]); want == '-' {
			if !isDash(r) {
				return false
			}
		} else if !foldEq(r, want) {
			return false
		}
		i += n
	}
	r, n = utf8.DecodeRuneInString(s[i:])
	return n == 0 || !isNameChar(r)
}

func skip(s string, i int, ok func(rune) bool) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !ok(r) {
			break
		}
		i += n
	}
	return i
}

// foldEq reports whether r equals want under simple case folding, as a
// case-insensitive Unicode pattern compares them (so ſ matches s).
func foldEq(r, want rune) bool {
	for f := want; ; {
		if f == r {
			return true
		}
		if f = unicode.SimpleFold(f); f == want {
			return false
		}
	}
}

// isNameChar is [A-Za-z0-9_-] under case folding: the two non-ASCII runes
// that fold into it (ſ and the Kelvin sign) count too.
func isNameChar(r rune) bool {
	if r < utf8.RuneSelf {
		return isAlnum(byte(r)) || r == '_' || r == '-'
	}
	return r == '\u017F' || r == '\u212A' // ſ, Kelvin sign
}

// isFiller is what may stand between "<", "/" and the tag name: anything but a
// name character or an angle bracket (or lookalike).
func isFiller(r rune) bool { return !isNameChar(r) && !isOpener(r) && !isCloser(r) }

// The lookalike tables are Claude Code's (2.1.332), which it uses both to spot
// disguised tags and, with 《 》 added, to normalise names.
var (
	openers = []rune{'<', 0x02C2, 0x1438, 0x16B2, 0x2039, 0x226A, 0x226E, 0x227A, 0x2280, 0x22D6,
		0x22D8, 0x2329, 0x276C, 0x276E, 0x2770, 0x27E8, 0x27EA, 0x2991, 0x2993, 0x29FC, 0x2A79,
		0x2AA1, 0x2AA6, 0x2AF7, 0x3008, 0xFE3D, 0xFE3F, 0xFE64, 0xFF1C, 0x1D236}
	closers = []rune{'>', 0x02C3, 0x1433, 0x203A, 0x226F, 0x227B, 0x2281, 0x22D7, 0x232A, 0x276D,
		0x276F, 0x2771, 0x27E9, 0x29FD, 0x3009, 0xFE40, 0xFE65, 0xFF1E, 0x16F3F, 0x1D237}
	// closersMore are lookalikes of ">" that the tag matcher leaves out but the
	// name normaliser strips.
	closersMore = []rune{0x2992, 0x2994, 0x2A7A, 0x2AA7, 0x226B, 0x22D9, 0x2AA2, 0x2AF8, 0x27EB, 0xFE3E}
	slashes     = []rune{'/', 0x2044, 0x2215, 0xFF0F}
	// dashes are what may stand for "-" in the tag name besides \p{Pc} and
	// \p{Pd}; U+10D6E GARAY HYPHEN is Pd since Unicode 16, newer than Go's
	// tables (15.0).
	dashes = []rune{0x02CD, 0x02D7, 0x0640, 0x07FA, 0x2017, 0x2043, 0x207B, 0x208B, 0x2212, 0x2796, 0x30FC, 0xFF70, 0x10D6E}
)

func isOpener(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '<'
	}
	return slices.Contains(openers, r)
}

func isCloser(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '>'
	}
	return slices.Contains(closers, r)
}

func isSlash(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '/'
	}
	return slices.Contains(slashes, r)
}

func isDash(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '-' || r == '_'
	}
	return unicode.In(r, unicode.Pc, unicode.Pd) || slices.Contains(dashes, r)
}

// isNameAngle reports the angle brackets SanitizeName strips.
func isNameAngle(r rune) bool {
	return isOpener(r) || isCloser(r) || r == '《' || r == '》' || slices.Contains(closersMore, r)
}

func isInvisible(r rune) bool {
	if r < utf8.RuneSelf {
		return r <= 0x08 || r == 0x0B || r == 0x0C || r >= 0x0E && r <= 0x1F || r == 0x7F
	}
	return invisibles.contains(r)
}

// invisibles are the characters Claude Code's matcher skips between the
// letters of a tag name: C0/C1 controls other than tab, newline and carriage
// return; format and default-ignorable characters; Hangul fillers; variation
// selectors; tag characters; and a list of combining marks.
var invisibles = newRuneSet(
	0x00, 0x08, 0x0B, 0x0C, 0x0E, 0x1F, 0x7F, 0x9F, 0x2028, 0x2029,
	// format and invisible
	0x0600, 0x0605, 0x06DD, 0x06DD, 0x070F, 0x070F, 0x0890, 0x0891, 0x08E2, 0x08E2,
	0x110BD, 0x110BD, 0x110CD, 0x110CD,
	0x00AD, 0x00AD, 0x034F, 0x034F, 0x061C, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5,
	0x180B, 0x180F, 0x200B, 0x200F, 0x202A, 0x202E, 0x2060, 0x206F, 0x3164, 0x3164,
	0xFE00, 0xFE0F, 0xFEFF, 0xFEFF, 0xFFA0, 0xFFA0, 0xFFF0, 0xFFFB, 0x1107F, 0x1107F,
	0x13430, 0x1343F, 0x16FE4, 0x16FE4, 0x1BCA0, 0x1BCA3, 0x1D173, 0x1D17A, 0xE0000, 0xE0FFF,
	// combining marks
	0x0300, 0x0344, 0x0346, 0x036F, 0x0483, 0x0489, 0x0591, 0x05BD, 0x05BF, 0x05BF,
	0x05C1, 0x05C2, 0x05C4, 0x05C5, 0x05C7, 0x05C7, 0x0610, 0x061A, 0x064B, 0x065F,
	0x0670, 0x0670, 0x06D6, 0x06DC, 0x06DF, 0x06E4, 0x06E7, 0x06E8, 0x06EA, 0x06ED,
	0x1AB0, 0x1AFF, 0x1DC0, 0x1DFF, 0x20D0, 0x20FF, 0x3099, 0x309A, 0xFE20, 0xFE2F,
)

// runeSet is a set of inclusive rune ranges, sorted and merged.
type runeSet [][2]rune

// newRuneSet takes lo, hi pairs in any order, overlaps allowed.
func newRuneSet(pairs ...rune) runeSet {
	var s runeSet
	for i := 0; i+1 < len(pairs); i += 2 {
		s = append(s, [2]rune{pairs[i], pairs[i+1]})
	}
	slices.SortFunc(s, func(a, b [2]rune) int { return int(a[0] - b[0]) })
	out := s[:0]
	for _, r := range s {
		if n := len(out); n > 0 && r[0] <= out[n-1][1]+1 {
			out[n-1][1] = max(out[n-1][1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}

func (s runeSet) contains(r rune) bool {
	_, found := slices.BinarySearchFunc(s, r, func(e [2]rune, r rune) int {
		switch {
		case e[1] < r:
			return -1
		case e[0] > r:
			return 1
		}
		return 0
	})
	return found
}
