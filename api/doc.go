// Package api is the gateway's control API: HTTP/JSON over the state
// directory's Unix socket and, optionally, loopback TCP with a bearer token
// and a Host allowlist. It also holds the Client the CLI uses. Handlers talk
// to the router only; they never import a transport.
package api
