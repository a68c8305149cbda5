// Package mcp serves the gateway as an MCP server: every MCP client (an
// agent with no peer protocol of its own) becomes a session of the mcp leg
// (leg/mcp), named as it asks, listed with the other legs' sessions, and
// reachable by name from them through the bridge. The server sees the
// router, and the leg only through Leg, the interface it defines
// (clients.go), which cmd/gateway fills with the leg it gives the router.
//
// Two transports reach the same server. The API serves Streamable HTTP at
// /mcp with its bearer tokens and their scopes (read lists and reads, send
// sends, approve answers prompts). `gateway mcp` serves stdio: it upgrades
// a connection to the control socket to a plain stream of MCP lines (Dial)
// and copies stdin and stdout through it, so the client's session lives in
// the gateway and leaves the roster when that process ends.
//
// What a client sends enters the router through the leg (Leg.Submit), as
// a message at an alias of its target, so the bridge sends it as from the
// client and relays its receipts back to the leg. What others send a
// client waits in its inbox in the leg, is pushed as a notification where
// the client accepts one, and is read with wait_for_messages (Leg.Read,
// the delivered receipt).
//
// A stdio client is also a Claude Code channel (channel.go,
// docs/protocols/claude-channels.md): a session that loads `gateway mcp`
// with --channels relays its permission prompts, which become pending
// prompts of the client (Leg.Prompt, source channel) answered back as the
// channel's allow or deny; with --channel what others send is pushed into
// the session.
//
// Limits (server.go): MaxSessions in all, MaxSessionsPerToken per grant,
// and an HTTP client that leaves without DELETE is taken for gone once it
// has had no event stream and no request for StreamGone or Quiet
// (presence.go).
package mcp
