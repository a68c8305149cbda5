// Package console is the gateway's web console: static assets embedded in
// the binary (an HTML page, plain JavaScript modules and a style sheet, no
// build step), served on the API listener at / and /console/ with a
// Content-Security-Policy that allows nothing but this origin and no inline
// script. Everything the page does is a call to the control API (package
// api), signed in through POST /v1/login with a session cookie and a CSRF
// token. It also renders pairing links as QR codes for a terminal.
package console
