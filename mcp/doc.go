// Package mcp serves the gateway as an MCP server: every MCP client (an
// agent with no peer protocol of its own) becomes a session of the mcp leg,
// named as it asks, listed with the other legs' sessions, and reachable by
// name from them through the bridge.
//
// Two transports reach the same server. The API serves Streamable HTTP at
// /mcp with its bearer tokens and their scopes (read lists and reads, send
// sends, approve answers prompts). `gateway mcp` serves stdio: it upgrades
// a connection to the control socket to a plain stream of MCP lines (Dial)
// and copies stdin and stdout through it, so the client's session lives in
// the gateway and leaves the roster when that process ends.
//
// What a client sends enters the router as a message at an alias of its
// target (Leg.submit), so the bridge sends it as from the client and
// relays its receipts back (Leg.Relay). What others send a client waits in
// its inbox (InboxSize, newest dropped when full with a dropped receipt),
// is pushed as a notification where the client accepts one, and is read
// with wait_for_messages (the delivered receipt).
//
// Limits (server.go): MaxSessions in all, MaxSessionsPerToken per grant,
// and an HTTP client that leaves without DELETE is taken for gone once it
// has had no event stream and no request for StreamGone or Quiet
// (presence.go).
package mcp
