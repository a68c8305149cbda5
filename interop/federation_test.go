package interop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/interop/qwencli"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
	"github.com/sessiongateway/gateway/testkit/fakeanthropic"
	"github.com/sessiongateway/gateway/testkit/fakeopenai"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
	"github.com/sessiongateway/gateway/testkit/natscluster"
)

// A real Claude Code session on host a and a real Qwen Code session on
// host b exchange a message and its answer through two gateways federated
// over a real three-node NATS cluster, each by the name its own CLI shows
// for the other: NAME.HOST. Both run in the bypass review class, so mode
// parity delivers both ways without a person.
func TestClaudeAndQwenOnTwoHostsExchangeAMessageAndItsAnswer(t *testing.T) {
	needInterop(t)
	needQwen(t)
	nc := natscluster.Start(t, natscluster.Options{Nodes: 3})
	wa, wb := gatewaytest.NewWorld(t), gatewaytest.NewWorld(t)
	ping := "ping-" + uuid.NewString()[:8]
	pong := "pong-" + uuid.NewString()[:8]

	qmodel := fakeopenai.Start(t, fakeopenai.CallToolOnce(ping, fakeopenai.SendMessageCall("work-it.a", pong), "answered"))
	qs := startQwenTUI(t, wb, qmodel, qwencli.ModeYolo)
	far := qs.Name() + ".b" // the Qwen session as host a shows it
	trigger := "please-ping-qwen-on-b"
	cmodel := fakeanthropic.Start(t, fakeanthropic.Rules(fakeanthropic.Text("ok"),
		fakeanthropic.CallTools(trigger, []fakeanthropic.Call{{Tool: "SendMessage", Input: fmt.Sprintf(`{"to":%q,"message":%q}`, far, ping)}}, "sent")))
	ga := gatewaytest.Start(t, wa, "gateway-a", "--federation", nc.URLs(), "--host", "a")
	gb := gatewaytest.Start(t, wb, "gateway-b", "--federation", nc.URL(1)+","+nc.URL(2), "--host", "b")
	cs := claudecli.Start(t, claudecli.Options{
		APIURL: cmodel.URL(), Name: "work-it", ConfigDir: wa.ConfigDir, XDGRuntimeDir: wa.Runtime,
		Args: []string{"--permission-mode", "bypassPermissions"}, Env: []string{"IS_SANDBOX=1"},
	})
	if s := ga.WaitListed(t, far); s.Host != "b" || s.Address != qs.Name()+"@b" || s.Protocol != message.ProtocolFederation {
		t.Fatalf("host a lists %+v", s)
	}
	waitAlias(t, ga, far)
	waitQwenAlias(t, wb, "work-it.a")

	if err := cs.SendUserTurn(trigger); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	qreq, err := qmodel.WaitContains(ctx, ping)
	if err != nil {
		t.Fatalf("the Qwen session on b never got the Claude session's message: %v", err)
	}
	if !strings.Contains(qreq.Text(), `name="work-it.a">`+"\n"+ping) {
		t.Errorf("the Qwen session does not see the message as from work-it.a: %s", qreq.Text())
	}
	req, err := cmodel.WaitContains(ctx, pong)
	if err != nil {
		t.Fatalf("the Claude session on a never got the Qwen session's answer: %v", err)
	}
	if !strings.Contains(req.Text(), `from-name="`+far+`"`) {
		t.Errorf("the answer does not come from %s: %s", far, req.Text())
	}
	// The receipts, as on one machine: the real Qwen TUI's own delivered
	// receipt travels back to a; the real Claude session sends none for a
	// clean delivery, so a infers it after the settle window and b hears
	// that.
	sent, forwarded := bridgedID(t, ga, "work-it"), bridgedID(t, gb, "work-it.a")
	gb.WaitStatus(t, forwarded, func(o router.Outbound) bool {
		last := o.Receipts[len(o.Receipts)-1]
		return o.Status == message.StatusDelivered && last.From == "uds:"+qs.IPCPath() && last.Detail == ""
	})
	ga.WaitStatus(t, sent, func(o router.Outbound) bool { return o.Status == message.StatusDelivered })
	answer, answered := bridgedID(t, gb, qs.Name()), bridgedID(t, ga, far)
	ga.WaitStatus(t, answered, func(o router.Outbound) bool {
		return o.Status == message.StatusDelivered && o.Receipts[len(o.Receipts)-1].Detail == "inferred"
	})
	gb.WaitStatus(t, answer, func(o router.Outbound) bool { return o.Status == message.StatusDelivered })
}
