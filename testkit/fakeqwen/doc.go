// Package fakeqwen runs an in-process stand-in for a Qwen Code session: a
// record in a Qwen home and an inbox socket that admits frames in Qwen
// Code's order and answers with its receipts. It is the gateway's own Qwen
// leg (which follows docs/protocols/qwen-cross-session.md and is checked
// against the real CLI and SDK in interop/) registered under another name, so fast tests can list it,
// send to it, and see what reached it without Node.
//
// Its record shares the test process's pid, so it takes the
// <pid>-<8 hex>.json name Qwen Code gives a second record of one process
// (docs/protocols/qwen-cross-session.md#files-and-paths).
package fakeqwen
