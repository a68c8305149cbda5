package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

var errTooLarge = errors.New("body over MaxInput")

// readCapped reads a body whole: into one buffer of its declared size, or
// else in chunks joined at the end, so a body that turns out over the cap
// costs the cap once, not the doublings of a growing buffer.
func readCapped(r io.Reader, size int64) ([]byte, error) {
	if size >= 0 {
		b := make([]byte, size)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		if n, _ := r.Read(make([]byte, 1)); n > 0 {
			return nil, errTooLarge
		}
		return b, nil
	}
	var chunks [][]byte
	total := 0
	for {
		c := make([]byte, 64<<10)
		n, err := io.ReadFull(r, c)
		chunks, total = append(chunks, c[:n]), total+n
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			out := make([]byte, 0, total)
			for _, c := range chunks {
				out = append(out, c...)
			}
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// tooLarge answers a request over MaxInput with a JSON-RPC error, so an
// MCP client shows what to do.
func tooLarge(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Connection", "close") // the rest of the body is not read
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"request over the gateway's %d-byte cap: send less (a message text is at most %d bytes)"}}`, MaxInput, MaxText)
}

// admit wraps initialize: a session takes one of MaxSessions slots for as
// long as it is open (a stdio upgrade took it already), is refused with
// ErrTooManySessions when none is free, and is closed if it does not
// finish initializing in pendingFor.
func (cn *conn) admit(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != "initialize" {
			return next(ctx, method, req)
		}
		s := cn.s
		if err := s.reserve(cn); err != nil {
			return nil, err
		}
		res, err := next(ctx, method, req)
		ss, _ := req.GetSession().(*sdk.ServerSession)
		if err != nil || ss == nil {
			s.release(cn, "")
			return res, err
		}
		sid := ss.ID()
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = ss.Close()
			s.release(cn, "")
			return res, nil
		}
		if sid != "" {
			s.owners[sid] = cn
		}
		s.conns[cn] = struct{}{} // so Close ends it, initialized or not
		s.wg.Add(1)
		s.mu.Unlock()
		cn.mu.Lock()
		cn.ss = ss
		if sid != "" && cn.kind == "http" {
			cn.arm()
		}
		cn.mu.Unlock()
		half := time.NewTimer(0) // a stdio upgrade's own timer, from its start, closes it
		half.Stop()
		if cn.kind != "stdio" {
			half = time.AfterFunc(s.pendingFor, func() {
				if _, err := cn.me(); err != nil {
					s.cfg.Drop(DropNotInitialized)
					s.log.Warn("mcp session closed: not initialized in time", "after", s.pendingFor)
					_ = ss.Close()
				}
			})
		}
		go func() {
			defer s.wg.Done()
			_ = ss.Wait()
			half.Stop()
			cn.disarm()
			s.release(cn, sid)
			s.mu.Lock()
			delete(s.conns, cn)
			s.mu.Unlock()
		}()
		return res, nil
	}
}

// reserve takes one of MaxSessions slots for cn, and one of its grant's
// share, unless it holds one already (a stdio upgrade reserves before
// initialize): a refusal is counted and says what to do.
func (s *Server) reserve(cn *conn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case cn.slot:
		return nil
	case s.open >= MaxSessions || s.closed:
		s.cfg.Drop(DropTooManySessions)
		return fmt.Errorf("%w (%d, initialized or not): close one (DELETE /mcp with its Mcp-Session-Id, or end its gateway mcp) or wait for an idle one to end (after %v)", ErrTooManySessions, MaxSessions, SessionIdle)
	case s.perGrant[cn.grant.ID] >= MaxSessionsPerToken:
		s.cfg.Drop(DropTokenShare)
		return fmt.Errorf("%w (%d, a token's share of the gateway's %d): close one of them (DELETE /mcp with its Mcp-Session-Id, or end its gateway mcp) or use another token (gateway tokens add)", ErrTokenShare, MaxSessionsPerToken, MaxSessions)
	}
	cn.slot = true
	s.open++
	s.perGrant[cn.grant.ID]++
	return nil
}

// release frees a session's slot, and its share of its grant's, if it
// still holds them.
func (s *Server) release(cn *conn, sid string) {
	s.mu.Lock()
	if cn.slot {
		cn.slot = false
		s.open--
		if s.perGrant[cn.grant.ID]--; s.perGrant[cn.grant.ID] <= 0 {
			delete(s.perGrant, cn.grant.ID)
		}
	}
	delete(s.owners, sid)
	s.mu.Unlock()
}

// Open is how many MCP sessions hold a slot of MaxSessions now.
func (s *Server) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}
