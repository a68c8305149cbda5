package settings

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// display is the value as `gateway config` shows it, already redacted.
func (s *setting) display() any {
	if s.kind == kindList {
		vals := s.value
		if s.source == Default {
			vals = splitList(s.flag.DefValue)
		}
		if s.secret() && len(vals) > 0 {
			return "[redacted]"
		}
		shown := make([]string, len(vals))
		for i, v := range vals {
			shown[i] = s.shown(v)
		}
		return shown
	}
	v := s.flag.Value.String()
	if s.source == Default && v == "" {
		v = s.derived
	}
	if s.secret() && v != "" {
		return "[redacted]"
	}
	return s.shown(v)
}

// Redactor is a flag.Value whose values are secret in part, by a shape
// only its package knows (a notification topic): Redact gives a value as
// it may be printed.
type Redactor interface {
	Redact(value string) string
}

// shown is v as it may be printed: as the flag's Redactor shows it, or
// with what redactInline hides hidden.
func (s *setting) shown(v string) string {
	if r, ok := unwrap(s.flag.Value).(Redactor); ok {
		return r.Redact(v)
	}
	return redactInline(v)
}

// redacted stands in for what is not shown.
const redacted = "[redacted]"

// redactInline hides what is secret by its shape rather than by its key's
// name: a URL's userinfo (https://user:password@host shows as
// https://[redacted]@host) and the arguments of an exec: command (a signer
// given --password P shows as exec:signer [redacted]). The program name
// and the host stay, so the value still says what it points at.
func redactInline(v string) string {
	if cmd, ok := strings.CutPrefix(v, "exec:"); ok {
		if f := strings.Fields(cmd); len(f) > 1 {
			return "exec:" + redactUserinfo(f[0]) + " " + redacted
		}
	}
	return redactUserinfo(v)
}

// redactUserinfo replaces the userinfo of every URL in s.
func redactUserinfo(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start := i + len("://")
		end := len(s)
		if j := strings.IndexAny(s[start:], "/?#\"\\ \t\n"); j >= 0 {
			end = start + j
		}
		b.WriteString(s[:start])
		if at := strings.LastIndexByte(s[start:end], '@'); at >= 0 {
			b.WriteString(redacted)
			start += at
		}
		b.WriteString(s[start:end])
		s = s[end:]
	}
}

// Annotate adds where a flag named in a check's message got its value, so
// an error about --held-expiry points at the file line or the variable. A
// check may quote a value: a secret's is blanked out first, and so are the
// parts redactInline hides.
func (st *Settings) Annotate(msg string) string {
	var notes []string
	for _, s := range st.list {
		if s.source != Default {
			for _, whole := range s.value {
				// A list's check may quote one item of a comma-separated value.
				for _, v := range append([]string{whole}, strings.Split(whole, ",")...) {
					shown := s.shown(v)
					if s.secret() {
						shown = redacted
					}
					if v != "" && shown != v {
						msg = strings.ReplaceAll(msg, v, shown)
						msg = strings.ReplaceAll(msg, strings.Trim(strconv.Quote(v), `"`), strings.Trim(strconv.Quote(shown), `"`))
					}
				}
			}
		}
		if s.origin == "" || !mentions(msg, "--"+s.key) {
			continue
		}
		notes = append(notes, fmt.Sprintf("--%s came from %s", s.key, s.origin))
	}
	msg = redactUserinfo(msg) // a check may quote a URL in a form of its own
	if len(notes) == 0 {
		return msg
	}
	return msg + " (" + strings.Join(notes, "; ") + ")"
}

// mentions says whether msg holds word not followed by more of a flag name.
func mentions(msg, word string) bool {
	for i := 0; ; {
		j := strings.Index(msg[i:], word)
		if j < 0 {
			return false
		}
		end := i + j + len(word)
		if end == len(msg) || !isNameByte(msg[end]) {
			return true
		}
		i = end
	}
}

func isNameByte(c byte) bool {
	return c == '-' || c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
}

// ShowDefault sets what key shows while it is left at an empty default
// whose effective value is worked out elsewhere (a directory under the
// state directory): `config` then shows that value, not an empty one.
func (st *Settings) ShowDefault(key, value string) {
	for _, s := range st.list {
		if s.key == key {
			s.derived = value
		}
	}
}

// Entry is one key of the effective configuration, as Print shows it.
type Entry struct {
	Key    string `json:"key"`
	Value  any    `json:"value"`
	Source string `json:"source"`
	Origin string `json:"origin,omitempty"` // the variable or file:line
	File   string `json:"file,omitempty"`   // a _FILE secret's path, never its content
}

// Entries lists every key, the config flag first, values redacted.
func (st *Settings) Entries() []Entry {
	var out []Entry
	if st.configFlag != "" {
		e := Entry{Key: st.configFlag, Value: strings.Join(st.configFiles, ", "), Source: st.configSource.String()}
		if len(st.configFiles) == 0 {
			e.Value = "none" // no file was found
		}
		out = append(out, e)
	}
	for _, s := range st.list {
		out = append(out, Entry{Key: s.key, Value: s.display(), Source: s.source.String(), Origin: s.origin, File: s.fromFile})
	}
	return out
}

// Print writes the effective configuration, secrets redacted: a table of
// key, value and source, or with asJSON a list of Entry.
func (st *Settings) Print(w io.Writer, asJSON bool) error {
	ents := st.Entries()
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(ents)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, e := range ents {
		val := e.Value
		if l, ok := val.([]string); ok {
			val = strings.Join(l, ",")
		}
		src := e.Source
		if e.Origin != "" {
			src += " " + e.Origin
		}
		if e.File != "" {
			src += " (" + e.File + ")"
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\n", e.Key, val, src)
	}
	return tw.Flush()
}
