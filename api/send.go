package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

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
	req := router.SendRequest{To: b.To, Body: b.Body, Mode: mode, FromName: b.FromName, Files: files, Unpaced: b.Unpaced}
	key := r.Header.Get(IdempotencyHeader)
	fresh := true
	if key != "" {
		if !validKey(key) {
			s.fail(w, errBadRequest(fmt.Sprintf("bad %s: want 1 to %d printable ASCII characters, no spaces", IdempotencyHeader, maxKeyLen)))
			return
		}
		g, _ := GrantFrom(r.Context())
		key = g.ID + " " + key // one client's keys are not another's
		var err error
		if req.ID, fresh, err = s.keys.claim(key, digest(b)); err != nil {
			s.fail(w, err)
			return
		}
	}
	out, err := s.cfg.Router.Send(r.Context(), req)
	if key != "" {
		s.keys.done(key, fresh, err == nil)
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	if !fresh {
		w.Header().Set(ReplayedHeader, "true")
	}
	if b.Wait {
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		defer cancel()
		out, _ = s.cfg.Router.Wait(ctx, out.Message.ID)
	}
	writeJSON(w, http.StatusCreated, out)
}
