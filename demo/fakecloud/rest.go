package fakecloud

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

const (
	maxBody      = 32 << 20 // tool results and attachments carry whole files
	defaultLimit = 100      // events per page when ?limit= is absent
)

var statuses = map[string]bool{"active": true, "archived": true, "idle": true}

// page is the list shape of the environments list, reused for every list.
type page struct {
	Data    any    `json:"data"`
	HasMore bool   `json:"has_more"`
	FirstID string `json:"first_id"`
	LastID  string `json:"last_id"`
}

// CreateSession adds a session without going through HTTP and returns its id.
func (s *Server) CreateSession(title string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addSession(Session{Title: title}).ID
}

// Session returns the session id as the REST endpoints show it.
func (s *Server) Session(id string) (Session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[id]
	if !ok {
		return Session{}, false
	}
	return ss.Session, true
}

// addSession stores a new session; s.mu must be held.
func (s *Server) addSession(v Session) *session {
	v.ID = s.nextID("session_01fake")
	v.CreatedAt, v.UpdatedAt = s.now(), s.now()
	if v.Status == "" {
		v.Status = "active"
	}
	ss := &session{Session: v, byUUID: map[string]int{}, subs: map[*subscriber]struct{}{}, streams: map[*stream]struct{}{}}
	s.sessions[v.ID] = ss
	s.order = append(s.order, v.ID)
	return ss
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	out := make([]Session, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.sessions[id].Session)
	}
	s.mu.Unlock()
	p := page{Data: out}
	if len(out) > 0 {
		p.FirstID, p.LastID = out[0].ID, out[len(out)-1].ID
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Title          string            `json:"title"`
		EnvironmentID  string            `json:"environment_id"`
		Events         []json.RawMessage `json:"events"`
		SessionContext json.RawMessage   `json:"session_context"`
	}
	if !readBody(w, r, &body) {
		return
	}
	// A create wraps initial events as {"type":"event","data":{...}}.
	var initial []json.RawMessage
	for i, e := range body.Events {
		var wrap struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(e, &wrap); err != nil || wrap.Type != "event" || len(wrap.Data) == 0 {
			writeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("events[%d]: want {\"type\":\"event\",\"data\":{...}}", i))
			return
		}
		initial = append(initial, wrap.Data)
	}
	msgs, classes := make([]Message, len(initial)), make([]Classification, len(initial))
	for i, e := range initial {
		m, err := decode(e)
		if err == nil {
			classes[i], err = s.classify(e)
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("events[%d]: %v", i, err))
			return
		}
		msgs[i] = m
	}
	if body.EnvironmentID != "" && !s.hasEnvironment(body.EnvironmentID) {
		writeError(w, http.StatusNotFound, "not_found_error", "environment not found")
		return
	}
	s.mu.Lock()
	ss := s.addSession(Session{Title: body.Title, EnvironmentID: body.EnvironmentID, SessionContext: body.SessionContext})
	for i, e := range initial {
		if _, _, err := s.store(ss, e, sourceClient); err != nil {
			s.mu.Unlock()
			writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		}
		// The first prompt starts the session's first turn.
		ss.posted, ss.classes = append(ss.posted, msgs[i]), append(ss.classes, classes[i])
		s.toWorker(ss, msgs[i], true)
	}
	v := ss.Session
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ss, ok := s.sessions[r.PathValue("id")]
	var v Session
	if ok {
		v = ss.Session
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "not_found_error", "session not found")
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) patchSession(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Title         *string `json:"title"`
		Status        *string `json:"status"`
		SessionStatus *string `json:"session_status"`
	}
	if !readBody(w, r, &body) {
		return
	}
	if body.Status == nil {
		body.Status = body.SessionStatus
	}
	if body.Status != nil && !statuses[*body.Status] {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "status must be active, archived or idle")
		return
	}
	s.mu.Lock()
	ss, ok := s.sessions[r.PathValue("id")]
	var v Session
	if ok {
		if body.Title != nil {
			ss.Title = *body.Title
		}
		if body.Status != nil {
			ss.Status = *body.Status
		}
		ss.UpdatedAt = s.now()
		v = ss.Session
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "not_found_error", "session not found")
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// listEvents pages through stored events: after_id is exclusive, limit
// defaults to 100. An after_id the session never had is a 400, so a client
// cannot silently skip a gap.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := pageLimit(q.Get("limit"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	s.mu.Lock()
	ss, ok := s.sessions[r.PathValue("id")]
	if !ok {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "not_found_error", "session not found")
		return
	}
	start := 0
	if after := q.Get("after_id"); after != "" {
		start = -1
		for i, id := range ss.ids {
			if id == after {
				start = i + 1
				break
			}
		}
		if start < 0 {
			s.mu.Unlock()
			writeError(w, http.StatusBadRequest, "invalid_request_error", "unknown after_id")
			return
		}
	}
	end := min(start+limit, len(ss.events))
	p := page{Data: append([]json.RawMessage{}, ss.events[start:end]...), HasMore: end < len(ss.events)}
	if end > start {
		p.FirstID, p.LastID = ss.ids[start], ss.ids[end-1]
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, p)
}

// pageLimit parses ?limit=: absent is defaultLimit, else a positive integer.
func pageLimit(v string) (int, error) {
	if v == "" {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, errors.New("limit must be a positive integer")
	}
	return n, nil
}

// listCodeEvents pages through the v2 envelopes of a session:
// from_sequence_num is the last number the client has (exclusive, as on the
// stream), so the page starts at the next one; a number beyond the end gives
// an empty page. first_id and last_id are event ids.
func (s *Server) listCodeEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := pageLimit(q.Get("limit"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	var from uint64
	if v := q.Get("from_sequence_num"); v != "" {
		if from, err = strconv.ParseUint(v, 10, 64); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "from_sequence_num must be a non-negative integer")
			return
		}
	}
	s.mu.Lock()
	ss, ok := s.sessions[r.PathValue("id")]
	if !ok {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "not_found_error", "session not found")
		return
	}
	n := uint64(len(ss.events))
	start := min(from, n)
	end := start + min(uint64(limit), n-start)
	p := page{Data: ss.envelopes(start, end), HasMore: end < n}
	if end > start {
		p.FirstID, p.LastID = ss.ids[start], ss.ids[end-1]
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, p)
}

// ping serves POST /v1/code/sessions/{id}/ping. The CLI calls the
// endpoint; its answer is not known, so this small body is our guess.
func (s *Server) ping(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ss, ok := s.sessions[r.PathValue("id")]
	if ok {
		ss.pings++
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "not_found_error", "session not found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"type": "pong", "session_id": r.PathValue("id"), "server_time": s.now()})
}

// Pings returns how many pings the session received.
func (s *Server) Pings(sessionID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[sessionID]; ok {
		return ss.pings
	}
	return 0
}

// Duplicates returns how many posted events the session turned away because
// it already had their uuid.
func (s *Server) Duplicates(sessionID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[sessionID]; ok {
		return ss.dups
	}
	return 0
}

// postEvents stores each event and streams it to subscribers (both the v1
// and the v2 path). The whole batch is checked first (each event decodes,
// each attestation verifies), so a refused post stores nothing. An event
// whose uuid the session already has is not stored or streamed again: the
// answer carries the stored copy, which makes a retried post idempotent.
// A control_response is also recorded as an Answer and resolves the pending
// can_use_tool prompt with its request_id; a control_request is recorded in
// Controls. With Echo, the session's worker sees each new event.
func (s *Server) postEvents(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Events []json.RawMessage `json:"events"`
	}
	if !readBody(w, r, &body) {
		return
	}
	if len(body.Events) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "events is empty")
		return
	}
	msgs := make([]Message, len(body.Events))
	for i, e := range body.Events {
		m, err := decode(e)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("events[%d]: %v", i, err))
			return
		}
		msgs[i] = m
	}
	classes := make([]Classification, len(body.Events))
	for i, e := range body.Events {
		c, err := s.classify(e)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("events[%d]: %v", i, err))
			return
		}
		classes[i] = c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[r.PathValue("id")]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found_error", "session not found")
		return
	}
	stored := make([]json.RawMessage, 0, len(msgs))
	for i, m := range msgs {
		if j, dup := ss.byUUID[m.UUID]; dup && m.UUID != "" {
			ss.dups++
			stored = append(stored, ss.events[j])
			continue
		}
		if ss.noEcho && m.Type == "user" { // the session gets it; the stream does not say so
			ss.held = append(ss.held, body.Events[i])
			ss.posted = append(ss.posted, m)
			ss.classes = append(ss.classes, classes[i])
			s.toWorker(ss, m, true)
			stored = append(stored, body.Events[i])
			continue
		}
		e, _, err := s.store(ss, body.Events[i], sourceClient)
		if err != nil { // cannot happen: Decode accepted the object
			writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		}
		ss.posted = append(ss.posted, m)
		ss.classes = append(ss.classes, classes[i])
		switch m.Type {
		case "control_response":
			ss.answer(m)
		case "control_request":
			ss.controls = append(ss.controls, *m.ControlRequest)
		}
		s.broadcast(ss, e)
		s.toWorker(ss, m, true)
		stored = append(stored, e)
	}
	writeJSON(w, http.StatusOK, page{Data: stored})
}

// answer records a posted control_response; s.mu must be held.
func (ss *session) answer(m Message) {
	cr := m.ControlResponse
	a := Answer{RequestID: cr.RequestID, Subtype: cr.Subtype, Decision: cr.Decision, Error: cr.Error, Raw: m.Raw}
	for i, p := range ss.pending {
		if p.RequestID == cr.RequestID {
			ss.pending = append(ss.pending[:i], ss.pending[i+1:]...)
			a.Matched = true
			break
		}
	}
	ss.answers = append(ss.answers, a)
}

func (s *Server) shareStatus(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	_, ok := s.sessions[r.PathValue("id")]
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "not_found_error", "session not found")
		return
	}
	// The endpoint's answer is not known; this shape is a guess.
	writeJSON(w, http.StatusOK, map[string]any{"shared": false})
}

// orgMatches refuses (403) an environments path naming another organisation.
func (s *Server) orgMatches(w http.ResponseWriter, r *http.Request) bool {
	if s.opts.OrgUUID != "" && r.PathValue("org") != s.opts.OrgUUID {
		writeError(w, http.StatusForbidden, "permission_error", "organization mismatch")
		return false
	}
	return true
}

func (s *Server) listEnvironments(w http.ResponseWriter, r *http.Request) {
	if !s.orgMatches(w, r) {
		return
	}
	envs := s.opts.Environments
	out := struct {
		Environments []Environment `json:"environments"`
		HasMore      bool          `json:"has_more"`
		FirstID      *string       `json:"first_id"`
		LastID       *string       `json:"last_id"`
	}{Environments: envs}
	if len(envs) > 0 {
		out.FirstID, out.LastID = &envs[0].EnvironmentID, &envs[len(envs)-1].EnvironmentID
	}
	writeJSON(w, http.StatusOK, out)
}

// hasEnvironment says whether the fake lists the environment id (with no
// environments configured, any id will do).
func (s *Server) hasEnvironment(id string) bool {
	if len(s.opts.Environments) == 0 {
		return true
	}
	for _, e := range s.opts.Environments {
		if e.EnvironmentID == id {
			return true
		}
	}
	return false
}

func (s *Server) getEnvironment(w http.ResponseWriter, r *http.Request) {
	if !s.orgMatches(w, r) {
		return
	}
	for _, e := range s.opts.Environments {
		if e.EnvironmentID == r.PathValue("env") {
			writeJSON(w, http.StatusOK, e)
			return
		}
	}
	writeError(w, http.StatusNotFound, "not_found_error", "environment not found")
}

func readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "body: "+err.Error())
		return false
	}
	return true
}

// store gives an event a uuid (when it has none), a session_id and a
// created_at (likewise), appends it to the session with src as its v2
// source and returns it as stored, with its uuid; s.mu must be held.
func (s *Server) store(ss *session, e json.RawMessage, src string) (json.RawMessage, string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(e, &obj); err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrBadLine, err)
	}
	var id string
	if raw, ok := obj["uuid"]; ok {
		json.Unmarshal(raw, &id)
	}
	if id == "" {
		id = s.nextID("evt_fake")
		obj["uuid"], _ = json.Marshal(id)
	}
	if _, ok := obj["session_id"]; !ok {
		obj["session_id"], _ = json.Marshal(ss.ID)
	}
	if _, ok := obj["created_at"]; !ok {
		obj["created_at"], _ = json.Marshal(s.now())
	}
	m := eventMeta{source: src}
	json.Unmarshal(obj["type"], &m.typ)
	json.Unmarshal(obj["created_at"], &m.createdAt)
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, "", err
	}
	out = bytes.TrimSpace(out)
	if _, ok := ss.byUUID[id]; !ok {
		ss.byUUID[id] = len(ss.events)
	}
	ss.events = append(ss.events, out)
	ss.ids = append(ss.ids, id)
	ss.meta = append(ss.meta, m)
	return out, id, nil
}
