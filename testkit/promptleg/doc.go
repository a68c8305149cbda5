// Package promptleg is the permission fixture the router, api and CLI
// tests share: a remote leg with one session that raises permission
// prompts when told and records the answers and control requests it is
// asked to carry, failing them on demand. It imports only message.
package promptleg
