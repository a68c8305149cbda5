package fakedaemon

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

func dirHash(abs string) string {
	sum := sha256.Sum256([]byte(abs))
	return hex.EncodeToString(sum[:])[:8]
}

var shortPattern = regexp.MustCompile(`^[a-f0-9]{8}$`)

// knownOps is the daemon's whole request union, in its own order: the
// message for an unknown op lists them all.
var knownOps = []string{"ping", "nudge", "yield", "lease", "leases", "await-ack", "dispatch", "list", "has",
	"check-credential", "kill", "retire-if-empty", "reply", "subscribe", "attach", "resize", "program-status",
	"ensure-spare", "permission-response", "respawn-stale", "shutdown"}

func fail(code, msg string) map[string]any {
	return map[string]any{"ok": false, "code": code, "error": msg}
}

func malformed(msg string) map[string]any { return fail("EUNKNOWN", "malformed request: "+msg) }

func ok(op string, fields map[string]any) map[string]any {
	out := map[string]any{"ok": true, "op": op}
	for k, v := range fields {
		out[k] = v
	}
	return out
}

// handle answers one request. A subscribe that succeeds returns the
// subscriber too; its snapshot is already queued.
func (d *Daemon) handle(line []byte) (map[string]any, *subscriber) {
	var v any
	if err := json.Unmarshal(line, &v); err != nil {
		return fail("EUNKNOWN", "bad json"), nil
	}
	var req map[string]any
	switch t := v.(type) {
	case map[string]any:
		req = t
	case []any:
		req = map[string]any{} // an array passes the daemon's object check; it then has no proto
	default:
		return fail("EUNKNOWN", "bad json"), nil
	}
	switch req["op"] {
	case "ping":
		return ok("ping", map[string]any{"version": Version, "proto": d.proto, "carriedPromptsFormat": 1, "signInPinFormat": 1}), nil
	case "shutdown":
		return d.shutdown(), nil
	}
	if p, isNum := req["proto"].(float64); !isNum || p != float64(d.proto) {
		return map[string]any{"ok": false, "code": "EPROTO", "serverProto": d.proto, "serverVersion": Version,
			"error": fmt.Sprintf("proto mismatch (server=%d, client=%s) \u2014 background service and CLI versions differ; restart claude", d.proto, jsString(req["proto"]))}, nil
	}
	op, _ := req["op"].(string)
	switch op {
	case "list":
		return ok("list", map[string]any{"jobs": d.Jobs()}), nil
	case "has":
		return d.has(req), nil
	case "subscribe":
		return d.subscribe(req)
	case "reply":
		return d.reply(req), nil
	case "dispatch":
		return d.dispatch(req), nil
	case "kill":
		return d.kill(req), nil
	}
	for _, k := range knownOps {
		if op == k {
			return fail("EUNKNOWN", "fakedaemon does not model op "+op), nil
		}
	}
	return malformed("Invalid discriminator value. Expected '" + strings.Join(knownOps, "' | '") + "'"), nil
}

// jsString prints a value as the daemon's template string does.
func jsString(v any) string {
	switch t := v.(type) {
	case nil:
		return "undefined"
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case string:
		return t
	case bool:
		return strconv.FormatBool(t)
	}
	return "[object Object]"
}

// str checks a required string field as the daemon's schema does.
func str(req map[string]any, field string) (string, map[string]any) {
	switch t := req[field].(type) {
	case string:
		return t, nil
	case nil:
		return "", malformed("Invalid input: expected string, received undefined")
	default:
		return "", malformed(fmt.Sprintf("Invalid input: expected string, received %s", jsType(t)))
	}
}

func jsType(v any) string {
	switch v.(type) {
	case nil:
		return "undefined"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	}
	return "object"
}

func short(req map[string]any) (string, map[string]any) {
	s, bad := str(req, "short")
	if bad != nil {
		return "", bad
	}
	if !shortPattern.MatchString(s) {
		return "", malformed("Invalid string: must match pattern /^[a-f0-9]{8}$/")
	}
	return s, nil
}

// authorised compares in constant time; an empty key never matches.
func (d *Daemon) authorised(req map[string]any) bool {
	auth, _ := req["auth"].(string)
	return auth != "" && subtle.ConstantTimeCompare([]byte(auth), []byte(d.key)) == 1
}

var errNotFound = fail("ENOJOB", "session not found \u2014 it may have already ended")

func (d *Daemon) has(req map[string]any) map[string]any {
	s, bad := short(req)
	if bad != nil {
		return bad
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	j := d.jobs[s]
	return ok("has", map[string]any{"alive": j != nil && j.rec.Outcome == "", "present": j != nil, "ready": j != nil})
}

func (d *Daemon) subscribe(req map[string]any) (map[string]any, *subscriber) {
	s, bad := short(req)
	if bad != nil {
		return bad, nil
	}
	tail := defaultTail
	if t, isNum := req["tail"].(float64); isNum {
		tail = int(t)
	} else if req["tail"] != nil {
		return malformed("Invalid input: expected number, received " + jsType(req["tail"])), nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	j := d.jobs[s]
	if j == nil {
		return errNotFound, nil
	}
	lines := j.tail
	if tail >= 0 && len(lines) > tail {
		lines = lines[len(lines)-tail:]
	}
	sub := &subscriber{frames: make(chan []byte, subQueue)}
	snap, _ := json.Marshal(map[string]any{"type": "snapshot", "record": j.rec, "streamTail": append([]string{}, lines...)})
	sub.frames <- snap
	if j.rec.Outcome != "" {
		settled, _ := json.Marshal(map[string]any{"type": "settled", "outcome": j.rec.Outcome})
		sub.frames <- settled
		close(sub.frames)
		return nil, sub
	}
	j.subs[sub] = struct{}{}
	return nil, sub
}

func (d *Daemon) reply(req map[string]any) map[string]any {
	s, bad := short(req)
	if bad != nil {
		return bad
	}
	text, bad := str(req, "text")
	if bad != nil {
		return bad
	}
	if !d.authorised(req) {
		if req["auth"] == nil {
			return fail("EAUTH", "reply rejected: this window didn't present the daemon control key \u2014 it is likely running a Claude Code older than the daemon (left open across an update?); restart this window and retry, or stop driving the control socket directly")
		}
		return fail("EAUTH", "reply rejected: the presented daemon control key doesn't match \u2014 retry, and restart the Claude Code daemon if this persists")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	j := d.jobs[s]
	if j == nil || j.rec.Outcome != "" {
		return errNotFound
	}
	next, _ := req["nextTurn"].(bool)
	d.replies = append(d.replies, Reply{Short: s, Text: text, NextTurn: next})
	// What the real worker's first state patch after a reply carried.
	_ = d.patchLocked(j, map[string]any{"tempo": "active", "needs": "", "detail": text})
	return ok("reply", nil)
}

// dispatchSpec is the part of the daemon's dispatch record it requires.
type dispatchSpec struct {
	Proto     *float64       `json:"proto"`
	Short     *string        `json:"short"`
	Nonce     string         `json:"nonce"`
	SessionID *string        `json:"sessionId"`
	CreatedAt *float64       `json:"createdAt"`
	Source    string         `json:"source"`
	Cwd       *string        `json:"cwd"`
	Launch    map[string]any `json:"launch"`
}

func (d *Daemon) dispatch(req map[string]any) map[string]any {
	if _, isNum := req["timeoutMs"].(float64); !isNum {
		return malformed("Invalid input: expected number, received undefined")
	}
	raw, _ := json.Marshal(req["d"])
	var spec dispatchSpec
	if _, isObj := req["d"].(map[string]any); !isObj || json.Unmarshal(raw, &spec) != nil {
		return malformed("Invalid input: expected object, received " + jsType(req["d"]))
	}
	switch {
	case spec.Proto == nil || *spec.Proto != float64(d.proto):
		return malformed("Invalid input: expected number, received undefined")
	case spec.Short == nil || !shortPattern.MatchString(*spec.Short):
		return malformed("Invalid string: must match pattern /^[a-f0-9]{8}$/")
	case spec.SessionID == nil || spec.Cwd == nil:
		return malformed("Invalid input: expected string, received undefined")
	case spec.CreatedAt == nil:
		return malformed("Invalid input: expected number, received undefined")
	case spec.Launch["mode"] != "prompt" && spec.Launch["mode"] != "resume" && spec.Launch["mode"] != "exec":
		return malformed("Invalid discriminator value. Expected 'prompt' | 'resume' | 'exec'")
	}
	if !d.authorised(req) {
		return fail("EAUTH", "dispatch rejected: this client didn't present the daemon control key")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if j := d.jobs[*spec.Short]; j != nil && j.rec.Outcome == "" {
		if spec.Nonce != "" && j.rec.Nonce == spec.Nonce {
			return d.dispatched(j.rec) // the same dispatch again: acknowledged, not run twice
		}
		return fail("ESTALE", "a previous dispatch with this id is still being cleaned up \u2014 retry in a moment")
	}
	nonce := spec.Nonce
	if nonce == "" {
		nonce, _ = randomHex(4)
	}
	source := spec.Source
	if source == "" {
		source = "fleet"
	}
	d.dispatches = append(d.dispatches, raw)
	rec := d.addLocked(Record{Short: *spec.Short, Nonce: nonce, SessionID: *spec.SessionID, Cwd: *spec.Cwd,
		CreatedAt: int64(*spec.CreatedAt), Source: source, State: "running", Tempo: "active"})
	return d.dispatched(rec)
}

func (d *Daemon) dispatched(r Record) map[string]any {
	return ok("dispatch", map[string]any{"short": r.Short, "pid": r.PID, "messagingSock": "", "via": "spare"})
}

func (d *Daemon) kill(req map[string]any) map[string]any {
	s, bad := short(req)
	if bad != nil {
		return bad
	}
	if sig := req["signal"]; sig != nil && sig != "SIGTERM" && sig != "SIGKILL" {
		return malformed(`Invalid option: expected one of "SIGTERM"|"SIGKILL"`)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	j := d.jobs[s]
	if j == nil {
		return errNotFound
	}
	if j.rec.Outcome == "" {
		_ = d.settleLocked(j, "killed")
	} else {
		d.removeLocked(s)
	}
	return ok("kill", nil)
}

// shutdown settles every live job as killed; serve then closes the
// stand-in, as the real daemon exits.
func (d *Daemon) shutdown() map[string]any {
	d.mu.Lock()
	n := 0
	for _, s := range append([]string(nil), d.order...) {
		if j := d.jobs[s]; j.rec.Outcome == "" {
			_ = d.settleLocked(j, "killed")
			n++
		}
	}
	d.mu.Unlock()
	return ok("shutdown", map[string]any{"reaped": n})
}
