package observability

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"golang.org/x/term"
)

// LogFormat is how log lines are written: text for a person at a
// terminal, JSON lines for a collector (journald, a container runtime).
type LogFormat string

// The formats; auto picks text on a terminal and JSON otherwise.
const (
	LogAuto LogFormat = "auto"
	LogText LogFormat = "text"
	LogJSON LogFormat = "json"
)

// ParseLogFormat reads --log-format.
func ParseLogFormat(s string) (LogFormat, error) {
	switch f := LogFormat(s); f {
	case LogAuto, LogText, LogJSON:
		return f, nil
	}
	return "", fmt.Errorf("--log-format %q: want auto, text or json", s)
}

// Set, String and Get make a LogFormat a flag value (--log-format).
func (f *LogFormat) Set(s string) error {
	v, err := ParseLogFormat(s)
	if err != nil {
		return errors.New("want auto, text or json")
	}
	*f = v
	return nil
}

func (f *LogFormat) String() string {
	if f == nil || *f == "" {
		return string(LogAuto)
	}
	return string(*f)
}

// Get returns the format as a string, so a configuration layer reads the
// flag as a string.
func (f *LogFormat) Get() any { return f.String() }

// IsTerminal says whether w is a terminal a person reads.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Terminal is w when it is a terminal, else nil.
func Terminal(w io.Writer) io.Writer {
	if IsTerminal(w) {
		return w
	}
	return nil
}

// Resolve turns auto into text or json for w.
func (f LogFormat) Resolve(w io.Writer) LogFormat {
	if f != LogAuto && f != "" {
		return f
	}
	if IsTerminal(w) {
		return LogText
	}
	return LogJSON
}

// NewFormatLogger is NewLogger in format f (auto resolved against w):
// the text form is slog's key=value lines with the time of day only, and
// the same redaction and trace ids as the JSON form.
func NewFormatLogger(w io.Writer, level slog.Leveler, f LogFormat) *slog.Logger {
	if f.Resolve(w) != LogText {
		return NewLogger(w, level)
	}
	h := slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey && a.Value.Kind() == slog.KindTime {
			return slog.String(slog.TimeKey, a.Value.Time().Format("15:04:05.000"))
		}
		if len(groups) == 0 && a.Key == slog.LevelKey {
			return a // a slog.Level, which redactAny would quote as JSON
		}
		return redactAttr(groups, a)
	}})
	return slog.New(WithTraceIDs(&redactMsg{h}))
}
