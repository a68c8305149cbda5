package message

import "time"

// Held is an inbound message waiting for a person to release or deny it.
type Held struct {
	Message Message   `json:"message"`
	Reason  string    `json:"reason"`
	Since   time.Time `json:"since"`
	Expires time.Time `json:"expires,omitzero"`
}
