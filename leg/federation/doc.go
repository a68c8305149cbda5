// Package federation lets gateways on several hosts reach each other's
// sessions through a NATS cluster with JetStream. Connect joins the cluster
// (or starts an embedded server) and claims this gateway's host name with a
// lease; Node.Serve publishes the local sessions to a shared roster bucket
// and consumes the messages other hosts send here, handing each to
// Local.Deliver and acknowledging it only after that outcome, once per id
// (a message's receipts go back in one order, those settled together in
// one envelope: receipts.go);
// the Leg (protocol message.ProtocolFederation) lists the other hosts'
// sessions, sends to them and reports their receipts from Run. Other hosts'
// sessions are listed under the federation protocol, not their own, so the
// router, which picks the leg by a session's protocol, needs no change to
// send through this leg; each is named NAME.HOST (valid in both CLIs'
// registries) and addressed NAME@HOST, and its own protocol stays on its
// host (Origin). The leg is an alias host: in production Local.Deliver is
// the router's Forward (ServeRouter, through Router: the node's view of
// the router, which a leg does not import), which takes a message as if it
// had arrived at an alias of the local session, so it takes the bridge's road (hop
// guard, sender's alias, receipts relayed back through Relay), and says
// when the local leg wrote it. The spool of sends kept while the link is
// down lives in the state directory's federation.db, the settled ids in
// federation-settled.db (not synced per message: it guards against
// duplicates, not loss).
// Permission prompts cross too (prompts.go, answers.go): each host publishes its own in a
// bucket, the leg raises the other hosts' in this router as a Prompter,
// and an answer travels to the prompt's host, which applies it through
// its own router and says back whether it won. Everything read
// from NATS is hostile: a versioned envelope, capped in size, signed by
// its origin host's ed25519 key (sign.go: over the JCS form; keys.go,
// trust.go: the host key, pinned keys), dropped with a counted Reason
// when it does not check out or is a replay. Status reports the hosts,
// the link and the consumers' lag (GET /v1/federation, /readyz); each
// host counts its traffic per peer host (metrics.go), and a message's
// trace context travels in its NATS headers, so the receiving host's span
// continues the sender's trace. The envelopes, subjects and buckets are
// docs/protocols/federation-envelopes.md. It may import leg, message,
// addressing, observability and internal/..., never the router, another
// leg, the api or cmd.
package federation
