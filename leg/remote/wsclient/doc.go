// Package wsclient is the remote leg's WebSocket client (RFC 6455, client
// side, no extensions): the opening handshake goes through a caller's
// *http.Client, frames are read straight off the upgraded connection.
//
// It exists for memory: a gateway follows thousands of remote sessions
// that are idle most of the time, and a connection here holds no buffer
// while it waits for the server (Wait): a read buffer is taken from a pool
// when bytes arrive and given back when they are consumed. Frame headers,
// their checks and close payloads are a frame codec library's; this
// package adds the handshake's checks, message assembly, the read limit,
// pongs and the close handshake.
package wsclient
