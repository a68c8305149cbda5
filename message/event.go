package message

import "time"

// EventType names what an Event carries.
type EventType string

const (
	EventMessage EventType = "message" // a message arrived for the gateway
	EventReceipt EventType = "receipt" // a receipt moved one of our messages
	EventIdle    EventType = "idle"    // a peer we subscribed to went idle or exited
	EventHeld    EventType = "held"    // an inbound message waits for release or denial
	EventDrop    EventType = "drop"    // an inbound message was turned away
	EventSession EventType = "session" // a session appeared or left

	EventRemote     EventType = "remote_event"       // a followed remote session said something
	EventPermission EventType = "permission_request" // a permission prompt appeared, was answered or withdrawn
	EventLink       EventType = "remote_link"        // a remote session's live stream connected, dropped or gave up
)

// Link is the state of a remote session's live stream.
type Link struct {
	SessionID string    `json:"session_id"`
	State     LinkState `json:"state"`
	Attempt   int       `json:"attempt,omitempty"`
	Error     string    `json:"error,omitempty"`
}

// IdleNotice is a peer's idle state, answering a subscription.
type IdleNotice struct {
	Peer       string    `json:"peer"` // address of the peer
	State      string    `json:"state"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	Detail     string    `json:"detail,omitempty"`
	SubID      string    `json:"subscription_id,omitempty"`
}

// Drop records an inbound message turned away.
type Drop struct {
	MsgID  string     `json:"msg_id,omitempty"`
	From   string     `json:"from,omitempty"`
	Reason DropReason `json:"reason"`
}

// Event is one thing that happened, fanned out to watchers.
type Event struct {
	ID      uint64      `json:"id"`
	Type    EventType   `json:"type"`
	Time    time.Time   `json:"time"`
	Leg     Protocol    `json:"leg,omitempty"`
	Message *Message    `json:"message,omitempty"`
	Receipt *Receipt    `json:"receipt,omitempty"`
	Idle    *IdleNotice `json:"idle,omitempty"`
	Drop    *Drop       `json:"drop,omitempty"`
	Held    *Held       `json:"held,omitempty"`
	Session *Session    `json:"session,omitempty"`

	Remote     *RemoteEvent       `json:"remote,omitempty"`
	Permission *PermissionRequest `json:"permission,omitempty"`
	Link       *Link              `json:"link,omitempty"`
}
