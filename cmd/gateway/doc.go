// Command gateway lets AI coding-agent sessions reach each other: it runs the
// gateway (serve) and is the CLI client of a running one. Its commands,
// flags and help are cobra commands; the client verbs' bodies are package
// cli's, serve's wiring is here.
package main
