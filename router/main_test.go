package router

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine the router starts is stopped by the end of Run.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
