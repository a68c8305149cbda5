// Package lifecycle runs a server process's parts until it is told to
// stop, then stops them in order within a grace period: the HTTP servers
// stop accepting and finish the requests in flight, queued work gets until
// the same deadline to flush, and the core (the router and its legs) stops
// last. Meanwhile SIGHUP runs reloaders instead of killing the process. A
// service manager is told READY=1 and STOPPING=1 (sd_notify). It imports
// nothing of ours.
package lifecycle
