// Package router sits between the control API and the legs: it lists every
// reachable session, resolves an address to the leg that reaches it, sends,
// tracks each outbound message through its receipts, and fans events out to
// watchers. It knows legs only through the leg.Leg interface and the
// optional abilities declared beside it (leg/leg.go), takes their events
// from the queue each leg's leg.Emitter feeds, offers what those abilities
// do to its callers through its own methods (abilities.go), and never
// imports a leg's own package (leg/claude, leg/qwen, leg/remote, ...).
//
// Around that core: the bridge publishes each leg's sessions as aliases on
// the others and forwards what arrives at an alias (bridge.go), guarded by
// the gateway's hop token in every chain it forwards (hop.go); the
// permission broker keeps remote sessions' can_use_tool prompts and lets the
// first answer win (permissions*.go; the errors an answer may get back are
// message's). Whoever answers them (the API, the approver package) does so
// through AnswerPermission.
package router
