package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsAlone is the floor under the cross-host rows: the NATS work the
// federation cannot do without, and nothing of the gateway's. k
// publishers (connected to urls[0], as host A is) publish n messages of a
// federated message's size, one after another each, to a stream as the
// federation's (work queue, file storage, three replicas, de-duplicated
// by Nats-Msg-Id), each until the stream has stored it; a durable pull
// consumer (connected to urls[2], as host C is) acknowledges each. The
// receipts the federation sends back are left out: the floor is lower
// than what any cross-host message costs. It returns the rate (until the
// consumer has them all) and the machine's CPU a message, every process
// counted, over the round and tail after it (the acknowledgements).
func natsAlone(ctx context.Context, urls []string, k, n int, tail time.Duration) (Rate, time.Duration, error) {
	pub, err := nats.Connect(urls[0])
	if err != nil {
		return Rate{}, 0, err
	}
	defer pub.Close()
	sub, err := nats.Connect(urls[2])
	if err != nil {
		return Rate{}, 0, err
	}
	defer sub.Close()
	pjs, err := jetstream.New(pub)
	if err != nil {
		return Rate{}, 0, err
	}
	sjs, err := jetstream.New(sub)
	if err != nil {
		return Rate{}, 0, err
	}
	cfg := jetstream.StreamConfig{Name: "BENCH_FLOOR", Subjects: []string{"benchfloor.>"}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Replicas: 3, Duplicates: 2 * time.Minute}
	if _, err := pjs.CreateStream(ctx, cfg); err != nil {
		return Rate{}, 0, fmt.Errorf("the floor's stream: %w", err)
	}
	defer func() { _ = pjs.DeleteStream(context.WithoutCancel(ctx), cfg.Name) }()
	cons, err := sjs.CreateOrUpdateConsumer(ctx, cfg.Name, jetstream.ConsumerConfig{Durable: "floor", FilterSubject: "benchfloor.c",
		AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: -1, MaxAckPending: 8192})
	if err != nil {
		return Rate{}, 0, fmt.Errorf("the floor's consumer: %w", err)
	}
	var got atomic.Int64
	all := make(chan struct{})
	cc, err := cons.Consume(func(m jetstream.Msg) {
		_ = m.Ack()
		if got.Add(1) == int64(n) {
			close(all)
		}
	}, jetstream.PullExpiry(5*time.Second), jetstream.PullHeartbeat(time.Second), jetstream.PullMaxBytes(8<<20))
	if err != nil {
		return Rate{}, 0, err
	}
	defer cc.Stop()
	body := bytes.Repeat([]byte("x"), 900) // about a signed envelope of a short message
	var (
		wg   sync.WaitGroup
		next atomic.Int64
		errs = make([]error, k)
	)
	cpu0, t0 := machineBusy(), time.Now()
	for s := range k {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n) && errs[s] == nil; i = next.Add(1) {
				_, errs[s] = pjs.PublishMsg(ctx, &nats.Msg{Subject: "benchfloor.c", Data: body}, jetstream.WithMsgID(fmt.Sprintf("floor-%d-%d", t0.UnixNano(), i)))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Rate{}, 0, err
	}
	select {
	case <-all:
	case <-ctx.Done():
		return Rate{}, 0, ctx.Err()
	case <-time.After(30 * time.Second):
		return Rate{}, 0, fmt.Errorf("the floor's consumer has %d of %d after 30 s", got.Load(), n)
	}
	rate := Rate{N: n, Span: time.Since(t0)}
	time.Sleep(tail) // the acknowledgements' replication: half a second is plenty
	return rate, (machineBusy() - cpu0) / time.Duration(n), nil
}

// tailWait is how long after a round the machine's CPU is still counted:
// work a round leaves behind (acknowledgements, receipts after the
// settle window) is its cost too. An idle federation's own work over it
// (heartbeats, the roster, Raft) is counted as well: small beside a
// round's thousands of messages.
const tailWait = settleWindow + 500*time.Millisecond

// machineBusy is the CPU time every process on the machine has spent
// since boot (user, system, interrupts; not idle or waiting for I/O), from
// /proc/stat; 0 where it cannot be read.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 8 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, v := range f[1:8] { // user nice system idle iowait irq softirq
		if i == 3 || i == 4 {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0
		}
		busy += n
	}
	return time.Duration(busy) * time.Second / userHZ
}
