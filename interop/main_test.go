package interop

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// The tests start gateways with testkit/gatewaytest: each in its own World,
// the binary built once for the whole run.

func TestMain(m *testing.M) {
	if !testutil.InteropOn() {
		fmt.Println("interop: skipped; run with GATEWAY_INTEROP=1 after .ci/install-interop.sh (scripts/test.sh does both)")
	}
	os.Exit(gatewaytest.Main(m))
}

// needInterop skips without GATEWAY_INTEROP=1 (fails in CI) and fails when
// the real CLI is missing or of another version.
func needInterop(t *testing.T) string {
	t.Helper()
	testutil.Interop(t, "interop tests need GATEWAY_INTEROP=1 and the real CLI (bash scripts/test.sh)")
	bin, err := claudecli.Bin()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := claudecli.CheckVersion(ctx, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}
