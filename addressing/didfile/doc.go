// Package didfile resolves did: addresses from a JSON file that maps each DID
// to an address the roster knows ({"did:web:example.com:alice":
// "bridge:session_01...", "did:key:z6Mk...": "work-08"}). The file is
// validated whole when read (every key a canonical did:, every value a
// parseable address that is not itself a did:), re-read when its size,
// modification time or identity changes, capped in size, and refused when it
// is a symlink, not a regular file, or writable by group or others: whoever
// can edit it can redirect messages. It imports addressing and the standard
// library only.
package didfile
