// Package addressing parses, prints and resolves the addresses a user or a peer
// gives for a session: uds:/path and bare /path/*.sock sockets, Windows named
// pipes, bridge:ID, did:METHOD:ID, a session name, "name [ref]", "[ref]" and a
// bare ref. A uds: address travels percent-encoded, as Claude Code prints it
// (EscapePath, UnescapePath): String encodes and Parse decodes, so a socket
// under a directory with a space in its name survives the envelope's from=
// grammar. Parse and String round-trip exactly; Resolve picks one Candidate
// from a roster the caller supplies and, when it cannot, says which inputs
// would. It knows no leg and imports nothing of ours.
package addressing
