package main

import (
	"errors"
	"log/slog"

	"github.com/sessiongateway/gateway/router"
)

// Temporary while the remote leg is assembled.
func newRemoteLeg(log *slog.Logger, o *remoteOpts) (router.Leg, error) {
	return nil, errors.New("remote leg not built")
}
