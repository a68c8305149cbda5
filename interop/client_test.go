package interop

import (
	"path/filepath"

	"github.com/sessiongateway/gateway/api"
)

func apiClient(g *gateway) *api.Client {
	return api.NewUnixClient(filepath.Join(g.w.stateDir, "gateway.sock"))
}
