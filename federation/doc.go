// Package federation lets gateways on several hosts reach each other's
// sessions through a NATS cluster with JetStream: Connect joins the cluster
// (or starts an embedded server) and claims this gateway's host name with a
// lease; Node.Serve publishes the local sessions to a shared roster bucket
// and consumes the messages other hosts send here, handing each to the
// caller's Deliver and acknowledging it only after the outcome; the Leg
// (protocol message.ProtocolFederation) lists the other hosts' sessions and
// sends to them, and reports their receipts from Run. Other hosts' sessions
// are listed under the federation protocol, not their own, so the router's
// resolution (which picks the leg by a session's protocol) needs no change
// to send through this leg; the session's own protocol stays on its host and
// is what Origin reports. Everything read from NATS is treated as hostile:
// a versioned envelope, capped in size, dropped with a counted Reason when
// it does not check out. It may import router, message, addressing and
// internal/..., never a transport, the api or cmd.
package federation
