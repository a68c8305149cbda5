package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
)

const (
	// maxWaiters bounds the control requests waiting for their answers.
	maxWaiters = 256
	// maxAsked bounds the mode and model changes of one session seen on its
	// stream and not yet answered.
	maxAsked = 64
	// refuseTimeout bounds the post refusing one unserved request.
	refuseTimeout = 10 * time.Second
)

// asked is a mode or model change a client asked of the session; its
// success answer makes it the session's info.
type asked struct {
	kind  wire.Subtype
	value string
}

// Control posts a control_request (interrupt, set_permission_mode,
// set_model) over HTTP and, for a followed session, waits up to
// ControlTimeout for its answer on the live stream: an error answer is a
// *message.ControlRefusedError, none in time message.ErrNoControlAnswer.
// A session the leg does not follow is only sent to (not acknowledged); one
// the leg neither lists nor follows is not found.
func (l *Leg) Control(ctx context.Context, target message.Session, c message.Control) (message.ControlResult, error) {
	id := target.SessionID
	if id == "" {
		var err error
		if id, err = targetID(message.Message{To: target.Address}); err != nil {
			return message.ControlResult{}, err
		}
	}
	req := map[string]any{"subtype": string(c.Kind)}
	switch c.Kind {
	case message.ControlInterrupt:
	case message.ControlSetPermissionMode:
		if c.Mode == "" {
			return message.ControlResult{}, errors.New("remote leg: set_permission_mode needs a mode")
		}
		req["mode"] = c.Mode
	case message.ControlSetModel:
		if c.Model != "" {
			req["model"] = c.Model
		}
	default:
		return message.ControlResult{}, fmt.Errorf("remote leg: unknown control %q", c.Kind)
	}
	rid := fmt.Sprintf("%s-%d-%s", c.Kind, l.cfg.Now().UnixMilli(), uuid.NewString()[:8])
	ev, err := wire.ControlEvent(uuid.NewString(), rid, req)
	if err != nil {
		return message.ControlResult{}, err
	}
	l.mu.Lock()
	f, followed := l.links[id]
	live := followed && !f.ended()
	known := followed || l.knownLocked(id)
	var answer chan *wire.ControlResponse
	if live && len(l.waiters) < maxWaiters {
		answer = make(chan *wire.ControlResponse, 1)
		l.waiters[rid] = answer
	}
	l.mu.Unlock()
	if !known {
		return message.ControlResult{}, &addressing.NotFoundError{Kind: addressing.KindBridge, Query: id}
	}
	if answer != nil {
		defer func() {
			l.mu.Lock()
			delete(l.waiters, rid)
			l.mu.Unlock()
		}()
	}
	res := message.ControlResult{RequestID: rid}
	if err := l.cfg.API.Post(ctx, id, ev); err != nil {
		return res, err
	}
	l.Wake(id) // a dormant stream comes back to hear the answer
	switch {
	case !live:
		res.Detail = "sent; the session is not followed, so its answer cannot be read"
		return res, nil
	case answer == nil:
		res.Detail = "sent; too many control requests wait for answers to wait for this one"
		return res, nil
	}
	t := time.NewTimer(l.cfg.ControlTimeout)
	defer t.Stop()
	select {
	case cr := <-answer:
		if cr.Subtype == "error" {
			return res, &message.ControlRefusedError{Kind: c.Kind, RequestID: rid, Reason: cr.Error}
		}
		res.Acknowledged, res.Detail = true, "the session answered success"
		return res, nil
	case <-t.C:
		return res, fmt.Errorf("%w: %s (request %s) unanswered after %v", message.ErrNoControlAnswer, c.Kind, rid, l.cfg.ControlTimeout)
	case <-ctx.Done():
		return res, ctx.Err()
	}
}

// knownLocked says whether the leg lists or follows session id, or cannot
// tell (no listing yet, or the last one failed); l.mu must be held.
func (l *Leg) knownLocked(id string) bool {
	if l.listedAt.IsZero() || l.listErr != nil || slices.Contains(l.cfg.Follow, id) {
		return true
	}
	return slices.ContainsFunc(l.listed, func(rs RemoteSession) bool { return rs.ID == id })
}

// followedLocked says whether the leg follows session id, or will once it
// has listed it (all are followed but archived ones); l.mu must be held.
func (l *Leg) followedLocked(id string) bool {
	if slices.Contains(l.cfg.Follow, id) {
		return true
	}
	if !l.followsAll() && !l.createdLocked(id) {
		return false
	}
	if l.listedAt.IsZero() {
		return true
	}
	return slices.ContainsFunc(l.listed, func(rs RemoteSession) bool { return rs.ID == id && rs.Status != "archived" })
}

// Info is what session target told about itself: initialize's answer and
// the mode and model it last reported or accepted. A session the leg
// neither lists nor follows is not found.
func (l *Leg) Info(_ context.Context, target message.Session) (message.SessionInfo, error) {
	id := target.SessionID
	if id == "" {
		var err error
		if id, err = targetID(message.Message{To: target.Address}); err != nil {
			return message.SessionInfo{}, err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f, live := l.links[id]
	if !live && !l.knownLocked(id) {
		return message.SessionInfo{}, &addressing.NotFoundError{Kind: addressing.KindBridge, Query: id}
	}
	var info message.SessionInfo
	if live {
		info = f.info
		info.Models, info.Commands = slices.Clone(info.Models), slices.Clone(info.Commands)
	}
	info.SessionID, info.Address, info.Followed = id, bridgeAddr(id), live || l.followedLocked(id)
	if info.Models == nil {
		info.Models = []message.ModelInfo{}
	}
	if info.Commands == nil {
		info.Commands = []message.CommandInfo{}
	}
	return info, nil
}

// request follows a control_request: a can_use_tool prompt is raised; a
// client's request (ours echoed, the web app's) is shown, and a mode or
// model change remembered until answered; any other subtype the gateway
// does not serve, so it is refused at once (after the update's events) and
// counted as a drop, or the session would wait for ever.
func (l *Leg) request(u *update) []message.Event {
	cr := u.m.ControlRequest
	u.re.Control = &message.RemoteControl{RequestID: cr.RequestID, Subtype: cr.SubtypeRaw}
	switch {
	case cr.Subtype == wire.SubtypeCanUseTool:
		return l.prompt(u)
	case cr.Subtype.FromClient():
		u.f.ask(cr)
		return u.events()
	}
	if !u.f.refuse(*cr) {
		return u.events() // seen before (a replay): answered already
	}
	u.re.Control.Unserved = true
	u.re.Text = fmt.Sprintf("%s request %s is not served by the gateway: answered with an error", cr.SubtypeRaw, cr.RequestID)
	return u.events(message.Event{Type: message.EventDrop, Leg: message.ProtocolRemote, Time: u.now,
		Drop: &message.Drop{MsgID: cr.RequestID, From: u.addr, Reason: message.DropUnserved}})
}

// refuse queues an unserved request's error answer; false if it was
// refused before.
func (f *follow) refuse(cr wire.ControlRequest) bool {
	if f.refused == nil {
		f.refused = map[string]bool{}
	}
	if f.refused[cr.RequestID] {
		return false
	}
	if len(f.refused) >= maxWaiters {
		clear(f.refused) // a session flooding requests: answering twice is harmless (same uuid)
	}
	f.refused[cr.RequestID] = true
	f.toRefuse = append(f.toRefuse, cr)
	return true
}

// ask remembers a mode or model change until its answer.
func (f *follow) ask(cr *wire.ControlRequest) {
	var a asked
	switch cr.Subtype {
	case wire.SubtypeSetPermissionMode:
		a = asked{cr.Subtype, cr.Mode}
	case wire.SubtypeSetModel:
		a = asked{cr.Subtype, cr.Model}
	default:
		return
	}
	if f.asked == nil || len(f.asked) >= maxAsked {
		f.asked = map[string]asked{}
	}
	f.asked[cr.RequestID] = a
}

// postRefusals answers the unserved requests queued on f with errors, over
// HTTP as every answer goes. The uuid is the request's, so a repeat is one
// event to the server.
func (l *Leg) postRefusals(ctx context.Context, id string, f *follow) {
	for _, cr := range f.toRefuse {
		if cr.RequestID == "" {
			continue // nothing to answer it by
		}
		ev, err := wire.ErrorEvent(answerUUID(id, cr.RequestID), cr.RequestID,
			fmt.Sprintf("the gateway does not serve %s control requests", cr.SubtypeRaw))
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, refuseTimeout)
			err = l.cfg.API.Post(pctx, id, ev)
			cancel()
		}
		if err != nil && ctx.Err() == nil {
			l.log.Warn("refusing an unserved control request failed", "session", id, "request_id", cr.RequestID, "subtype", cr.SubtypeRaw, "err", err)
		}
	}
	f.toRefuse = f.toRefuse[:0]
}

// response follows a control_response that is not a permission answer:
// the answer to a control request of ours wakes its waiter; a success
// answer to a mode or model change, or to initialize, updates the
// session's info.
func (l *Leg) response(id string, f *follow, cr *wire.ControlResponse, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w, ok := l.waiters[cr.RequestID]; ok {
		delete(l.waiters, cr.RequestID)
		w <- cr
	}
	a, ok := f.asked[cr.RequestID]
	delete(f.asked, cr.RequestID)
	if cr.Subtype != "success" {
		return
	}
	switch {
	case cr.Initialize != nil:
		f.info.Initialized, f.info.OutputStyle = true, cr.Initialize.OutputStyle
		f.info.Models, f.info.Commands = nil, nil
		for _, m := range cr.Initialize.ModelList() {
			f.info.Models = append(f.info.Models, message.ModelInfo{Value: m.Value, DisplayName: m.DisplayName, Description: m.Description})
		}
		for _, c := range cr.Initialize.CommandList() {
			f.info.Commands = append(f.info.Commands, message.CommandInfo{Name: c.Name, Description: c.Description, ArgumentHint: c.ArgumentHint})
		}
	case ok && a.kind == wire.SubtypeSetPermissionMode:
		f.info.PermissionMode = a.value
	case ok && a.kind == wire.SubtypeSetModel:
		f.info.Model = a.value
	default:
		return
	}
	f.info.Updated = now
}

// system takes the session's mode and model from its init message.
func (l *Leg) system(id string, f *follow, m wire.Message, now time.Time) {
	if m.System == nil || m.System.Subtype != "init" {
		return
	}
	var init struct {
		Model          string `json:"model"`
		PermissionMode string `json:"permissionMode"`
	}
	if json.Unmarshal(m.Raw, &init) != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if init.Model != "" {
		f.info.Model = init.Model
	}
	if init.PermissionMode != "" {
		f.info.PermissionMode = init.PermissionMode
	}
	f.info.Updated = now
}
