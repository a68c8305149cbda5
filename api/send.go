package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sessiongateway/gateway/idempotency"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// SendBody is the body of POST /v1/messages.
type SendBody struct {
	To   string `json:"to"`
	Body string `json:"body,omitempty"`
	// Text is body's old JSON spelling, read for one release and marked
	// deprecated in the OpenAPI document; set Body. (No Go deprecation
	// marker: the field goes with the JSON alias.)
	Text     string   `json:"text,omitempty"`
	Mode     string   `json:"mode,omitempty"`
	FromName string   `json:"from_name,omitempty"`
	Files    []string `json:"files,omitempty"`
	Wait     bool     `json:"wait,omitempty"`
	Timeout  string   `json:"timeout,omitempty"`
	// Unpaced sends even when the receiver's published limits say the
	// message would be dropped.
	Unpaced bool `json:"unpaced,omitempty"`
}

// MaxText caps a send's text in bytes: a leg frames the text in a line of
// at most 1 MiB, and escaping can double it there. A longer text is refused
// with a 413 before anything is sent, not sent to fail.
const MaxText = 512 << 10

// body is the message's text from "body" or its deprecated alias "text".
func (b SendBody) body() (string, error) {
	switch {
	case b.Body != "" && b.Text != "" && b.Body != b.Text:
		return "", errBadRequest(`"body" and its deprecated alias "text" differ: send "body" alone`)
	case b.Body != "":
		return b.Body, nil
	case b.Text != "":
		return b.Text, nil
	}
	return "", errBadRequest(`"body" is required`)
}

func (s *Server) waitFor(raw string) (time.Duration, error) {
	if raw == "" {
		return 30 * time.Second, nil
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d <= 0 {
		return 0, errBadRequest(fmt.Sprintf("bad timeout %q: want a positive duration like 30s", raw))
	}
	return min(d, s.cfg.MaxWait), nil
}

func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	var b SendBody
	if err := decode(r, &b); err != nil {
		s.fail(w, err)
		return
	}
	if strings.TrimSpace(b.To) == "" {
		s.fail(w, errBadRequest(`"to" is required`))
		return
	}
	body, err := b.body()
	if err != nil {
		s.fail(w, err)
		return
	}
	if len(body) > MaxText {
		writeError(w, Error{Error: fmt.Sprintf(`"body" is %d bytes, over the cap of %d (%d KiB)`, len(body), MaxText, MaxText>>10), Code: CodeTooLarge})
		return
	}
	b.Body, b.Text = body, "" // the two spellings of one send are one request
	mode, err := message.ParseMode(b.Mode)
	if err != nil {
		s.fail(w, errBadRequest(err.Error()))
		return
	}
	files, ferr := s.attachments(r, b.Files)
	if ferr != nil {
		writeError(w, *ferr)
		return
	}
	wait, err := s.waitFor(b.Timeout)
	if err != nil {
		s.fail(w, err)
		return
	}
	if b.Wait { // before sending: a refusal after it would lose the answer
		release, ok := s.holdStream(w, r)
		if !ok {
			return
		}
		defer release()
	}
	req := router.SendRequest{To: b.To, Body: b.Body, Mode: mode, FromName: b.FromName, Files: files, Unpaced: b.Unpaced}
	if key := r.Header.Get(IdempotencyHeader); key != "" {
		s.sendKeyed(w, r, req, key, digest(b), b.Wait, wait)
		return
	}
	out, err := s.cfg.Router.Send(r.Context(), req)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.answerSend(w, r, out, b.Wait, wait)
}

// sendKeyed sends req under an Idempotency-Key: a new key sends, a known
// one never does (see replay).
func (s *Server) sendKeyed(w http.ResponseWriter, r *http.Request, req router.SendRequest, key, dig string, waits bool, wait time.Duration) {
	if !validKey(key) {
		s.fail(w, errBadRequest(fmt.Sprintf("bad %s: want 1 to %d printable ASCII characters, no spaces", IdempotencyHeader, maxKeyLen)))
		return
	}
	g, _ := GrantFrom(r.Context())
	k, fresh, err := s.keys.claim(g.ID, key, dig)
	if err != nil {
		s.fail(w, err)
		return
	}
	if !fresh {
		s.replay(w, r, k, waits, wait)
		return
	}
	req.ID = k.MsgID
	out, err := s.cfg.Router.Send(r.Context(), req)
	s.keys.done(g.ID, key, out, err == nil)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.answerSend(w, r, out, waits, wait)
}

// replay answers a retry under a known key with where its message stands,
// and sends nothing: the router's (or the outbox's) word when it still
// knows the message, else what the key stored when the first request was
// answered, marked forgotten.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, k idempotency.Key, waits bool, wait time.Duration) {
	w.Header().Set(ReplayedHeader, "true")
	out, err := s.cfg.Router.Replay(k.MsgID)
	if err == nil {
		s.answerSend(w, r, out, waits, wait)
		return
	}
	w.Header().Set(ForgottenHeader, "true")
	st := k.Status // never 0 here: claim sends an unanswered key's message again
	writeJSON(w, http.StatusCreated, router.Outbound{
		Message: message.Message{ID: k.MsgID, To: k.To, ToName: k.ToName, Protocol: k.Protocol, Time: k.Created},
		Status:  st, Receipts: []message.Receipt{},
	})
}

// answerSend answers 201 with out, after waiting (up to wait) for its
// final status when the request asked to.
func (s *Server) answerSend(w http.ResponseWriter, r *http.Request, out router.Outbound, waits bool, wait time.Duration) {
	if waits {
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		defer cancel()
		if o, err := s.cfg.Router.Wait(ctx, out.Message.ID); !errors.Is(err, router.ErrUnknownMessage) {
			out = o // forgotten meanwhile: the answer stays the send's
		}
	}
	writeJSON(w, http.StatusCreated, out)
}
