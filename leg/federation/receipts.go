package federation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sessiongateway/gateway/message"
)

// maxReceiptBatch caps the receipts one shard settles together, and so
// the receipts one envelope carries.
const maxReceiptBatch = 64

// settleRelayed settles the receipts of one shard in order, until Close.
// What is queued when it looks is settled together: one commit of their
// records, then one envelope per origin host (one publish, one signature,
// one acknowledgement at the origin for the lot), so a busy host sends
// one receipt envelope per batch rather than per message, and an idle one
// sends each at once.
func (n *Node) settleRelayed(relays <-chan relayed) {
	defer n.done.Done()
	batch := make([]relayed, 0, maxReceiptBatch)
	for {
		select {
		case <-n.ctx.Done():
			return
		case r := <-relays:
			batch = append(batch[:0], r)
		}
	more:
		for len(batch) < maxReceiptBatch {
			select {
			case r := <-relays:
				batch = append(batch, r)
			default:
				break more
			}
		}
		n.settleAll(n.ctx, batch)
	}
}

// settleAll is settle for a batch of receipts, in their order: recorded
// (those not recorded yet) in one commit, sent to their origins, and the
// messages still held acknowledged, or offered again when their
// receipts could not be sent.
func (n *Node) settleAll(ctx context.Context, batch []relayed) {
	n.mu.Lock()
	in := n.in
	n.mu.Unlock()
	flights := make([]*flight, len(batch))
	if in != nil {
		in.mu.Lock()
		for i, r := range batch {
			if f := in.flights[r.key]; f != nil {
				f.hear()
				flights[i] = f
			}
		}
		in.mu.Unlock()
	}
	// Recorded before the flights are let go: a copy offered meanwhile
	// finds one or the other.
	var puts []keyedReceipt
	for _, r := range batch {
		if !r.recorded {
			puts = append(puts, keyedReceipt{r.key, r.rc})
		}
	}
	if err := n.settled.putAll(puts); err != nil {
		n.log.Warn("federation settled ids not recorded", "receipts", len(puts), "err", err)
	}
	var hosts []string
	byHost := map[string][]message.Receipt{}
	for _, r := range batch {
		if n.beforeReceipt != nil {
			n.beforeReceipt(r.rc)
		}
		if byHost[r.origin] == nil {
			hosts = append(hosts, r.origin)
		}
		byHost[r.origin] = append(byHost[r.origin], r.rc)
	}
	errs := make(map[string]error, len(hosts))
	for _, h := range hosts {
		errs[h] = n.sendReceipts(ctx, h, byHost[h])
	}
	if in == nil {
		return
	}
	type settledMsg struct {
		msg jetstream.Msg
		err error
	}
	var msgs []settledMsg
	in.mu.Lock()
	for i, r := range batch {
		if f := flights[i]; f != nil && in.flights[r.key] == f {
			msgs = append(msgs, settledMsg{f.msg, errs[r.origin]})
			in.drop(r.key)
		}
	}
	in.mu.Unlock()
	for _, m := range msgs {
		if m.err != nil {
			_ = m.msg.NakWithDelay(time.Second)
		} else {
			_ = m.msg.Ack()
		}
	}
}

// sendReceipts sends rcs to host in order: one receipt as it always was,
// several in one envelope, stored under an id of their own (a retry is
// one copy).
func (n *Node) sendReceipts(ctx context.Context, host string, rcs []message.Receipt) error {
	if len(rcs) == 1 {
		return n.sendReceipt(ctx, host, rcs[0])
	}
	e := envelope{Kind: kindReceipts, From: n.cfg.Host, To: host, Receipts: rcs}
	b, err := n.encode(e)
	if err != nil { // over the cap (long reasons): one at a time
		for _, rc := range rcs {
			if e := n.sendReceipt(ctx, host, rc); e != nil && err == nil {
				err = e
			}
		}
		return err
	}
	h := sha256.New()
	for _, rc := range rcs {
		h.Write([]byte(rc.MsgID + "." + rc.Status.String() + "\n"))
	}
	err = n.publish(ctx, receiptSubject(host), "rcs."+hex.EncodeToString(h.Sum(nil)[:16]), func() ([]byte, error) {
		if first := b; first != nil { // signed above, to tell the cap
			b = nil
			return first, nil
		}
		return n.encode(e)
	})
	for _, rc := range rcs {
		n.receiptCounted(ctx, host, "out", rc.Status, err)
	}
	if err != nil {
		n.log.Warn("federation receipts not sent", "receipts", len(rcs), "first_msg_id", rcs[0].MsgID, "err", err)
	}
	return err
}
