// Package addressing parses, prints and resolves the addresses a user or a peer
// gives for a session: uds:/path and bare /path/*.sock sockets, Windows named
// pipes, bridge:ID, did:METHOD:ID, a session name, "name [ref]", "[ref]" and a
// bare ref. Parse and String round-trip exactly; Resolve picks one Candidate
// from a roster the caller supplies and, when it cannot, says which inputs
// would. It knows no transport and imports nothing of ours.
package addressing
