package answerfmt

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The reply grammar: what the approver session writes back to a notice.
// ParseReply reads it; the answer specs it carries are read by ParseAnswers
// (answers.go), as `gateway answer` reads its arguments.

// ReplyVerb is what an approver's reply does to a prompt.
type ReplyVerb uint8

const (
	VerbAllow  ReplyVerb = iota + 1 // allow <id> [--suggestion N]... [--mode M] [--rule R]... [--input JSON]
	VerbDeny                        // deny <id> [reason]
	VerbAnswer                      // answer <id> "Question=Option"...
)

var replyVerbWire = [...]string{VerbAllow: "allow", VerbDeny: "deny", VerbAnswer: "answer"}

func (v ReplyVerb) String() string { return wireString(replyVerbWire[:], v, "verb(%d)") }

// ReplyProblem says what is wrong with a reply that starts with a verb.
type ReplyProblem uint8

const (
	ReplyNoID       ReplyProblem = iota + 1 // nothing after the verb
	ReplyBadID                              // the id has characters no id has
	ReplyExtraWords                         // allow takes only --options after the id
	ReplyNoAnswers                          // answer names no Question=Option
	ReplyUnclosed                           // a quote, a [ list or a { object } is not closed
	ReplyBadOption                          // an allow option allow does not take, or without a value
)

var replyProblemWire = [...]string{
	ReplyNoID: "no-id", ReplyBadID: "bad-id", ReplyExtraWords: "extra-words",
	ReplyNoAnswers: "no-answers", ReplyUnclosed: "unclosed", ReplyBadOption: "bad-option",
}

func (p ReplyProblem) String() string {
	return wireString(replyProblemWire[:], p, "reply-problem-%d")
}

// wireString is v's spelling in table, or unknown formatted with v's number
// when table has none.
func wireString[T ~uint8](table []string, v T, unknown string) string {
	if int(v) < len(table) && table[v] != "" {
		return table[v]
	}
	return fmt.Sprintf(unknown, uint8(v))
}

// ReplyError is a reply that starts with a verb but does not parse.
type ReplyError struct {
	Verb    ReplyVerb
	Problem ReplyProblem
	Detail  string
}

func (e *ReplyError) Error() string { return e.Detail }

// ErrNotAReply means a message's first line does not start with a verb: it
// is a message, not a reply to a prompt.
var ErrNotAReply = errors.New("the first line does not start with allow, deny or answer")

// Reply is an approver's reply to a permission prompt.
type Reply struct {
	Verb   ReplyVerb
	ID     string   // the prompt's short id, in lower case
	Reason string   // deny: told to the session's model; may be empty
	Specs  []string // answer: "Question=Option" specs, as ParseAnswers reads them
	// Allow are an allow's options, as `gateway allow` takes them; they
	// are checked when the reply is applied (AllowOptions.Answer).
	Allow AllowOptions
}

// String writes the reply the way ParseReply reads it.
func (r Reply) String() string {
	s := r.Verb.String() + " " + r.ID
	switch r.Verb {
	case VerbAllow:
		for _, w := range r.Allow.args() {
			s += " " + w
		}
	case VerbDeny:
		if r.Reason != "" {
			s += " " + r.Reason
		}
	case VerbAnswer:
		for _, sp := range r.Specs {
			s += " " + QuoteSpec(sp)
		}
	}
	return s
}

// ParseReply reads the first line of body that says anything (blank lines
// and code fences skipped) as `allow ID [OPTION...]`, `deny ID [reason]` or
// `answer ID SPEC...`. Allow's options are `gateway allow`'s: --suggestion
// N (repeatable), --mode MODE, --rule RULE (repeatable), --rule-destination
// D and --input JSON, each with its value as the next word or after "=";
// a JSON object is kept whole, spaces and quotes included. It tolerates what people and models wrap commands in: the line
// in quotes or backticks, a leading "/", a verb in any case or followed by
// ":", an id in <> or followed by punctuation. Answer specs are split like a
// shell's words ("..." with \" and \\, '...', “...”, \x), and a [ list ] is
// kept whole with its quotes, so Q=["A","B"] needs no more quoting. A first
// line without a verb is ErrNotAReply; one with a verb that does not parse
// is a *ReplyError.
func ParseReply(body string) (Reply, error) {
	verb, rest, ok := splitVerb(ReplyLine(body))
	if !ok {
		return Reply{}, ErrNotAReply
	}
	bad := func(p ReplyProblem, format string, args ...any) (Reply, error) {
		return Reply{}, &ReplyError{Verb: verb, Problem: p, Detail: fmt.Sprintf(format, args...)}
	}
	tok, rest, found, err := nextWord(rest)
	switch {
	case err != nil:
		return bad(ReplyUnclosed, "%v", err)
	case !found:
		return bad(ReplyNoID, "%s needs the request's id, such as %s p1a2b3c", verb, verb)
	}
	id := strings.ToLower(strings.Trim(tok, "<>.,;:!"))
	if !validReplyID(id) {
		return bad(ReplyBadID, "%q is not a request id; ids look like p1a2b3c", tok)
	}
	rep := Reply{Verb: verb, ID: id}
	switch verb {
	case VerbAllow:
		for {
			var word string
			word, rest, found, err = readWord(rest, true)
			if err != nil {
				return bad(ReplyUnclosed, "%v", err)
			}
			if !found {
				break
			}
			name, value, hasValue := strings.Cut(strings.TrimPrefix(word, "--"), "=")
			if !strings.HasPrefix(word, "--") {
				return bad(ReplyExtraWords, "allow takes the id and options (--suggestion N, --mode MODE, --rule RULE, --input JSON), but %q follows it", strings.TrimSpace(word+rest))
			}
			if !hasValue {
				if value, rest, found, err = readWord(rest, true); err != nil {
					return bad(ReplyUnclosed, "%v", err)
				} else if !found {
					return bad(ReplyBadOption, "allow's --%s needs a value", name)
				}
			}
			if !rep.Allow.set(name, value) {
				return bad(ReplyBadOption, "allow takes --suggestion, --mode, --rule, --rule-destination and --input, not --%s", name)
			}
		}
	case VerbDeny:
		rep.Reason = unquoteReason(rest)
	case VerbAnswer:
		for {
			var spec string
			spec, rest, found, err = nextWord(rest)
			if err != nil {
				return bad(ReplyUnclosed, "%v", err)
			}
			if !found {
				break
			}
			rep.Specs = append(rep.Specs, spec)
		}
		if len(rep.Specs) == 0 {
			return bad(ReplyNoAnswers, `answer needs "Question=Option" after the id, such as answer %s "1=1"`, id)
		}
	}
	return rep, nil
}

// ReplyVerbOf is the cheap first look: does body start with a verb?
func ReplyVerbOf(body string) (ReplyVerb, bool) {
	v, _, ok := splitVerb(ReplyLine(body))
	return v, ok
}

// ReplyLine is the first line of body that says anything, unwrapped from
// quotes or backticks and a leading "/".
func ReplyLine(body string) string {
	for line := range strings.Lines(body) {
		l := strings.TrimSpace(line)
		if l == "" || strings.HasPrefix(l, "```") {
			continue
		}
		for len(l) >= 2 && strings.IndexByte("\"'`", l[0]) >= 0 && l[len(l)-1] == l[0] {
			l = strings.TrimSpace(l[1 : len(l)-1])
		}
		return strings.TrimPrefix(l, "/")
	}
	return ""
}

// splitVerb reads the verb word of line and returns what follows it.
func splitVerb(line string) (ReplyVerb, string, bool) {
	word, rest := line, ""
	if i := strings.IndexFunc(line, unicode.IsSpace); i >= 0 {
		word, rest = line[:i], line[i:]
	}
	word = strings.TrimSuffix(word, ":")
	for v, w := range replyVerbWire {
		if w != "" && strings.EqualFold(word, w) {
			return ReplyVerb(v), rest, true
		}
	}
	return 0, "", false
}

// validReplyID accepts what the broker's ids are made of.
func validReplyID(id string) bool {
	if id == "" || len(id) > 64 || id[0] == '-' {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// unquoteReason trims a deny reason and takes off quotes around all of it.
func unquoteReason(s string) string {
	s = strings.TrimSpace(s)
	for len(s) >= 2 && strings.IndexByte("\"'`", s[0]) >= 0 && s[len(s)-1] == s[0] &&
		strings.IndexByte(s[1:len(s)-1], s[0]) < 0 {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	return s
}

// nextWord reads one shell-like word from s: found is false when only
// space is left.
func nextWord(s string) (word, rest string, found bool, err error) { return readWord(s, false) }

// readWord is nextWord; with objects, a { JSON object } is kept whole too.
func readWord(s string, objects bool) (word, rest string, found bool, err error) {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	if s == "" {
		return "", "", false, nil
	}
	var b strings.Builder
	i := 0
	for i < len(s) {
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsSpace(c):
			return b.String(), s[i:], true, nil
		case c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' && j+1 < len(s) && (s[j+1] == '"' || s[j+1] == '\\') {
					j++
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return "", "", false, errors.New(`a "quote" is not closed`)
			}
			i = j + 1
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return "", "", false, errors.New(`a 'quote' is not closed`)
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 2
		case c == '“':
			j := strings.Index(s[i+size:], "”")
			if j < 0 {
				return "", "", false, errors.New(`a “quote” is not closed`)
			}
			b.WriteString(s[i+size : i+size+j])
			i += size + j + len("”")
		case c == '\\' && i+1 < len(s):
			_, n := utf8.DecodeRuneInString(s[i+1:])
			b.WriteString(s[i+1 : i+1+n])
			i += 1 + n
		case c == '[' || c == '{' && objects:
			n, ok := jsonListEnd(s[i:])
			if !ok {
				return "", "", false, fmt.Errorf("a %c ... %c is not closed", c, closer[s[i]])
			}
			b.WriteString(s[i : i+n])
			i += n
		default:
			b.WriteString(s[i : i+size])
			i += size
		}
	}
	return b.String(), "", true, nil
}

// closer is the bracket that closes each opening one.
var closer = map[byte]byte{'[': ']', '{': '}'}

// jsonListEnd finds the ] (or }) that closes the [ (or {) s starts with,
// skipping brackets inside JSON strings.
func jsonListEnd(s string) (int, bool) {
	open, end := s[0], closer[s[0]]
	depth, inString := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case open:
			depth++
		case end:
			if depth--; depth == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}
