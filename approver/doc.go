// Package approver lets a local session answer remote sessions' permission
// prompts: it sends each new prompt to that session as a message from the
// gateway (render.go), reads the session's allow, deny and answer replies
// in message/answerfmt's grammar and answers through the router. It is a
// client of the router, following its events and calling its public
// methods, and imports no leg: the router never knows it is there.
package approver
