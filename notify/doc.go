// Package notify tells people when something waits for them: a permission
// prompt or a held message, and opt-in a session gone idle or a remote turn
// ended. It follows the router's event hub and posts each notification to
// every target: a generic webhook (JSON, signed with HMAC-SHA256 in
// X-Gateway-Signature) or an ntfy topic (title, message, priority and action
// buttons). The buttons open one-time signed links on the gateway's API
// listener (/v1/actions/{token}) that answer the prompt or decide the held
// message exactly once. Delivery runs beside the router, one bounded queue
// and goroutine per target (a dead target delays no other), retried with
// backoff; what cannot be queued or delivered is counted and logged, never
// the link's secret.
package notify
