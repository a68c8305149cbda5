package main

import (
	"flag"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/addressing/didfile"
)

// didFileFlag registers serve's --did-file (env GATEWAY_DID_FILE through
// the configuration layer).
func didFileFlag(fs *flag.FlagSet, _ *env) *string {
	return fs.String("did-file", "",
		`JSON file mapping did: addresses to session addresses, {"did:web:example.com:alice": "work-08"}; re-read when it changes; must not be a symlink or writable by group or others (env GATEWAY_DID_FILE)`)
}

// openDIDFile returns the resolver for path, checked now so that a bad file
// stops serve before it registers anywhere; nil when path is empty, which
// leaves did: addresses refused with addressing.ErrNoDIDResolver.
func openDIDFile(path string) (addressing.DIDResolver, error) {
	if path == "" {
		return nil, nil // a nil interface, not a nil *Resolver: the router tests for nil
	}
	r, err := didfile.Open(path)
	if err != nil {
		return nil, err
	}
	return r, nil
}
