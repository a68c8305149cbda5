// Package mcp is the mcp leg: every MCP client of the gateway (an agent
// with no peer protocol of its own) is a session of it, named as it asks
// (made unique), listed with the other legs' sessions and reachable by
// name from them through the bridge.
//
// What a client sends enters the router as a message at an alias of its
// target (Submit), so the bridge sends it as from the client and relays
// its receipts back (Relay). What others send a client waits in its inbox
// (InboxSize, the newest dropped when full with a dropped receipt), is
// pushed to it where the server was told how, and is read with Read (the
// delivered receipt). A client that leaves has its unread messages
// answered dropped, and its name is claimed for LeftFor so a message to it
// is answered with a receipt saying it left.
//
// A client that is a Claude Code channel relays its session's permission
// prompts (Prompt): each is a pending prompt of the client, answered
// through the channel's reply (Answer, a bare allow or deny), capped per
// client and in all, and withdrawn when the client leaves (prompts.go).
//
// The MCP server (package mcp at the top of the module: transports, tools,
// resources) holds this leg through an interface of its own, wired by
// cmd/gateway; this package imports the leg contract, the model,
// addressing and internal packages only.
package mcp
