package qwen

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
)

// Send writes m to the Qwen session at m.To: the auth line with its
// ipcToken, then the user frame with toSessionId, our inbox and replyToken.
// A send the receiver's published limits would only drop is refused here.
func (p *Leg) Send(ctx context.Context, m message.Message) (message.Receipt, error) {
	path, ok := addressing.SocketOf(m.To)
	if !ok || !IsLocalIPCPath(path) {
		return message.Receipt{}, fmt.Errorf("not a qwen inbox address: %q", m.To)
	}
	rec, err := p.target(ctx, path, m.ToSessionID, m.ToName)
	if err != nil {
		return message.Receipt{}, err
	}
	name := m.FromName
	if name == "" {
		name = p.cfg.Name
	}
	f := userFrame(m.ID, Sender{IPCPath: p.socketPath, IPCToken: p.token, Name: name, Mode: m.Mode}, rec, m.Body)
	if len(m.HopChain) > 0 {
		f.HopChain = m.HopChain // a forwarded message carries its relays, so a loop is seen
	}
	payload, err := Payload(rec.IPCToken, f) // validates f
	if err != nil {
		return message.Receipt{}, err
	}
	var res Reservation
	if !m.Unpaced {
		if res, err = p.mirror.Reserve(path, m.Body, m.ID); err != nil {
			return message.Receipt{}, err
		}
	}
	p.ledger.Track(m.ID, path)
	if d, ok := ctx.Deadline(); ok && time.Until(d) > sendTimeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, sendTimeout)
		defer cancel()
	} // else ctx's own deadline is sooner, or the dial's default applies
	// Our replyToken is in the frame: the listener must be the record's
	// process before a byte goes out.
	if err := uds.DialWriteHeld(ctx, path, rec.holder(), payload); err != nil {
		if errors.Is(err, uds.ErrNotHolder) {
			p.log.Info("nothing sent: the target inbox belongs to another process than its record's", "to", path, "err", err)
		}
		if !errors.Is(err, uds.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			// Never written: the receiver's meters did not move either.
			if !m.Unpaced {
				res.Refund()
			}
			p.ledger.Forget(m.ID)
		}
		return message.Receipt{}, fmt.Errorf("writing to %s: %w", path, err)
	}
	return message.Receipt{MsgID: m.ID, Status: message.StatusSent, Time: p.clk.Now()}, nil
}

// sendTimeout bounds one dial + write, as Qwen Code's 5 s: the bound the
// dial applies by itself when ctx has no deadline.
const sendTimeout = uds.DefaultDialTimeout
