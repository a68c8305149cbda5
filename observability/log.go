package observability

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"regexp"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Secret is a value that must never reach a log: slog prints it as [redacted].
type Secret string

// LogValue hides the secret.
func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

const redacted = "[redacted]"

// secretKeys are attribute names whose values are redacted whatever their type,
// so a token logged by mistake under an obvious name still stays secret.
var secretKeys = []string{"token", "secret", "password", "authorization", "cookie", "api_key", "apikey"}

// tokenPattern catches token-shaped values inside free text: JSON fields
// named like secrets (the auth line of the peer protocols, a key file or
// record printed whole), bearer headers and Qwen controller tokens.
var tokenPattern = regexp.MustCompile(`("[^"]*(?i:token|secret|password|authorization|cookie|api_?key)"\s*:\s*")[^"]*(")|((?i:bearer)\s+)[A-Za-z0-9._~+/=-]+|(qpc_)[0-9a-f]+`)

// RedactText replaces token-shaped substrings of s.
func RedactText(s string) string {
	return tokenPattern.ReplaceAllStringFunc(s, func(m string) string {
		sub := tokenPattern.FindStringSubmatch(m)
		switch {
		case sub[1] != "":
			return sub[1] + redacted + sub[2]
		case sub[3] != "":
			return sub[3] + redacted
		default:
			return sub[4] + redacted
		}
	})
}

func isSecretKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range secretKeys {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

func redactAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindGroup {
		return a
	}
	if isSecretKey(a.Key) {
		return slog.String(a.Key, redacted)
	}
	switch a.Value.Kind() {
	case slog.KindString:
		if s := a.Value.String(); mayHoldToken(s) {
			return slog.String(a.Key, RedactText(s))
		}
	case slog.KindAny:
		return slog.Attr{Key: a.Key, Value: redactAny(a.Value.Any())}
	}
	return a
}

func mayHoldToken(s string) bool {
	return strings.ContainsAny(s, "\"_") || strings.Contains(strings.ToLower(s), "bearer")
}

// redactAny redacts what the JSON handler would print for v: an error's
// text (an error may quote an auth line), or a value's JSON encoding (a
// struct with a token field).
func redactAny(v any) slog.Value {
	switch v := v.(type) {
	case error:
		return slog.StringValue(RedactText(v.Error()))
	}
	b, err := json.Marshal(v)
	if err != nil || !mayHoldToken(string(b)) {
		return slog.AnyValue(v)
	}
	return slog.AnyValue(json.RawMessage(RedactText(string(b))))
}

// NewLogger returns a JSON logger on w that redacts secrets by attribute name,
// by type (Secret) and by shape inside strings.
func NewLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: redactAttr})
	return slog.New(WithTraceIDs(&redactMsg{h}))
}

// WithTraceIDs wraps h so a record logged with a context that carries a
// span gets trace_id and span_id attributes: a log line can be found from
// a trace, and a trace from a log line.
func WithTraceIDs(h slog.Handler) slog.Handler { return traceIDs{h} }

type traceIDs struct{ slog.Handler }

func (h traceIDs) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceIDs) WithAttrs(as []slog.Attr) slog.Handler { return traceIDs{h.Handler.WithAttrs(as)} }

func (h traceIDs) WithGroup(name string) slog.Handler { return traceIDs{h.Handler.WithGroup(name)} }

// redactMsg redacts the message text too, which ReplaceAttr does not see.
type redactMsg struct{ slog.Handler }

func (h *redactMsg) Handle(ctx context.Context, r slog.Record) error {
	if strings.ContainsAny(r.Message, "\"_") || strings.Contains(strings.ToLower(r.Message), "bearer") {
		nr := slog.NewRecord(r.Time, r.Level, RedactText(r.Message), r.PC)
		r.Attrs(func(a slog.Attr) bool { nr.AddAttrs(a); return true })
		r = nr
	}
	return h.Handler.Handle(ctx, r)
}

func (h *redactMsg) WithAttrs(as []slog.Attr) slog.Handler {
	return &redactMsg{h.Handler.WithAttrs(as)}
}

func (h *redactMsg) WithGroup(name string) slog.Handler { return &redactMsg{h.Handler.WithGroup(name)} }

// WithLevel wraps h so records below lv are left out, whatever level h was
// built with: the level can then be changed while running (SIGHUP). A
// handler's Handle does not check the level again; the Logger asks Enabled.
func WithLevel(h slog.Handler, lv slog.Leveler) slog.Handler { return leveled{h, lv} }

// Leveled returns log with its level held in a LevelVar that can move
// while running, starting at the lowest level log has enabled.
func Leveled(log *slog.Logger) (*slog.Logger, *slog.LevelVar) {
	lv := new(slog.LevelVar)
	lv.Set(slog.LevelError)
	for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn} {
		if log.Enabled(context.Background(), l) {
			lv.Set(l)
			break
		}
	}
	return slog.New(WithLevel(log.Handler(), lv)), lv
}

type leveled struct {
	slog.Handler
	lv slog.Leveler
}

func (h leveled) Enabled(_ context.Context, l slog.Level) bool { return l >= h.lv.Level() }

func (h leveled) WithAttrs(as []slog.Attr) slog.Handler {
	return leveled{h.Handler.WithAttrs(as), h.lv}
}

func (h leveled) WithGroup(name string) slog.Handler { return leveled{h.Handler.WithGroup(name), h.lv} }
