package router

import "github.com/sessiongateway/gateway/internal/away"

// Away is the away switch and when it was last set.
func (r *Router) Away() away.Status { return r.away().Status() }

// SetAway switches away on or off: while on, a local session's prompt
// waits for an answer from elsewhere instead of going back to its terminal
// after --local-prompt-wait; switching it off gives every prompt that
// waited longer back to its terminal at once.
func (r *Router) SetAway(on bool) (away.Status, error) {
	st, err := r.away().Set(on, r.cfg.Clock.Now())
	if err == nil {
		r.log.Info("away switched", "away", st.Away)
	}
	return st, err
}

func (r *Router) away() *away.State { return r.cfg.Away }
