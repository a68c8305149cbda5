package uds

import (
	"os"
	"testing"
	"time"
)

func TestStartTimeIsWhenTheProcessStartedToTheSecondPsPrints(t *testing.T) {
	got, err := StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if got.After(time.Now()) || got.IsZero() {
		t.Fatalf("start time %v: not in the past", got)
	}
	lstart, err := Lstart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if want := got.Truncate(time.Second).Format("Mon Jan _2 15:04:05 2006"); lstart != want {
		t.Errorf("StartTime %v reads as %q, Lstart says %q", got, want, lstart)
	}
	if _, err := StartTime(reapedPid(t)); err == nil {
		t.Error("a reaped process has a start time")
	}
}
