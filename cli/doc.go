// Package cli holds the bodies of the gateway's client verbs: what each
// asks the running gateway (through api.Client) or its state directory,
// how the answer is printed (a table, a line, or JSON), the one error
// shape and exit codes scripts rely on, and the short ids people type.
// Command names, flags and help live in cmd/gateway; a verb here takes
// its parsed options and an IO.
package cli
