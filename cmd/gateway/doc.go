// Command gateway lets AI coding-agent sessions reach each other: it runs the
// gateway (serve) and is the CLI client of a running one.
package main
