package wsclient

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"syscall"
)

// HandshakeError is a server's answer to the opening handshake that is not
// a WebSocket. Dial returns the response with it.
type HandshakeError struct{ Reason string }

func (e *HandshakeError) Error() string { return "websocket handshake: " + e.Reason }

// keptBody is how much of a refusal's body Dial keeps for the caller.
const keptBody = 1 << 10

// Dial opens a WebSocket to rawURL (ws, wss, http or https) through hc,
// with hdr added to the request. It returns the server's response when
// there was one: on a refusal its Body holds the first KiB of what the
// server said, and the error is a *HandshakeError.
func Dial(ctx context.Context, hc *http.Client, rawURL string, hdr http.Header) (*Conn, *http.Response, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, err
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	case "http", "https":
	default:
		return nil, nil, fmt.Errorf("websocket: URL scheme %q is not ws, wss, http or https", u.Scheme)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, err
	}
	if hdr != nil {
		req.Header = hdr.Clone()
	}
	key := newKey()
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", key)
	var nc net.Conn // the connection the request went over
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { nc = i.Conn },
	}))
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, keptBody))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return nil, resp, &HandshakeError{Reason: fmt.Sprintf("status %d, not 101", resp.StatusCode)}
	}
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if err := checkUpgrade(resp.Header, key); err != nil || !ok {
		resp.Body.Close()
		if err == nil {
			err = &HandshakeError{Reason: "the upgraded connection cannot be written"}
		}
		return nil, resp, err
	}
	return newConn(rwc, rawConn(nc)), resp, nil
}

// rawConn is nc's socket when nc is a plain socket (a TLS connection
// buffers what it decrypts), else nil.
func rawConn(nc net.Conn) syscall.RawConn {
	var sc syscall.Conn
	switch c := nc.(type) {
	case *net.TCPConn:
		sc = c
	case *net.UnixConn:
		sc = c
	default:
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil || !rawWaits {
		return nil
	}
	return raw
}

// newKey is a Sec-WebSocket-Key: 16 random bytes in base64.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails
	return base64.StdEncoding.EncodeToString(b[:])
}

// acceptGUID is RFC 6455's constant of the Sec-WebSocket-Accept digest.
const acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// acceptKey is the Sec-WebSocket-Accept a server must answer key with.
func acceptKey(key string) string {
	h := sha1.Sum([]byte(key + acceptGUID))
	return base64.StdEncoding.EncodeToString(h[:])
}

// checkUpgrade checks a 101's headers as RFC 6455 4.1 asks of a client.
// We offer no extension and no subprotocol, so the server may pick none.
func checkUpgrade(h http.Header, key string) error {
	bad := func(reason string) error { return &HandshakeError{Reason: reason} }
	switch {
	case !strings.EqualFold(h.Get("Upgrade"), "websocket"):
		return bad("no Upgrade: websocket")
	case !hasToken(h.Values("Connection"), "upgrade"):
		return bad("no Connection: Upgrade")
	case h.Get("Sec-WebSocket-Accept") != acceptKey(key):
		return bad("wrong Sec-WebSocket-Accept")
	case h.Get("Sec-WebSocket-Extensions") != "":
		return bad("an extension we did not offer")
	case h.Get("Sec-WebSocket-Protocol") != "":
		return bad("a subprotocol we did not offer")
	}
	return nil
}

// hasToken reports whether a comma-separated header holds token.
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// errClosed is what reads and writes return once the connection is closed.
var errClosed = errors.New("websocket: connection closed")
