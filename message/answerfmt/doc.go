// Package answerfmt reads what a person (or a model) types to answer a
// permission prompt, and writes it back the same way: "Question=Option"
// specs (answers.go), the options of an allow (allow.go) and the approver
// session's one-line allow, deny and answer replies (reply.go). The CLI's
// `gateway allow` and `gateway answer`, the MCP server's answer tool and
// the approver all read answers here, so they accept the same things. It
// imports message only.
package answerfmt
