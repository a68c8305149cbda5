// Package demo runs demo sessions that let a new user try local messaging
// without the real CLIs: `gateway demo-local` starts demo-claude (a Claude
// Code protocol session) and demo-qwen (a Qwen Code protocol session), each
// its own process registered exactly as a real session is (registry entry or
// record, and a socket), each answering what it is sent by name, as a real
// session answers with SendMessage or send_message. "ask NAME TEXT" makes a
// demo send TEXT on to NAME, which shows the bridge between the two legs.
//
// The sessions are the legs' own peers (leg/claude and leg/qwen) with
// other names; the parent re-executes the gateway binary for each and holds
// a pipe to it, whose end (even on SIGKILL) makes the child deregister and
// exit. It imports the local legs, never the router, the API or testkit;
// demo/fakecloud, the fake claude.ai of `gateway demo-cloud`, lives beside it.
package demo
