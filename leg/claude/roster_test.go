package claude

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/leg/uds"
)

func TestProcStartMatchesBothSpellings(t *testing.T) {
	pid := os.Getpid()
	ticks, err := uds.StartTicks(pid)
	if err != nil {
		t.Fatal(err)
	}
	lstart, err := uds.Lstart(pid)
	if err != nil {
		t.Fatal(err)
	}
	lt, err := time.Parse(time.ANSIC, lstart)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		procStart string
		want      bool
	}{
		{"Linux start ticks of the live process match", strconv.FormatUint(ticks, 10), true},
		{"other ticks mean a recycled pid", strconv.FormatUint(ticks+1, 10), false},
		{"the ps lstart spelling matches", lstart, true},
		{"ps lstart one second off still matches (ps truncates)", lt.Add(time.Second).Format(time.ANSIC), true},
		{"an lstart a minute off is a recycled pid", lt.Add(time.Minute).Format(time.ANSIC), false},
		{"garbage never matches", "yesterday", false},
		{"empty never matches", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := procStartMatches(pid, tt.procStart); got != tt.want {
				t.Fatalf("procStartMatches(%q) = %v, want %v", tt.procStart, got, tt.want)
			}
		})
	}
}

func TestCheckProcClassifiesEntries(t *testing.T) {
	p := &Leg{pidDomain: "linux:m:pid:[1]"}
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	ticks, _ := uds.StartTicks(child.Process.Pid)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	const ours, other = "linux:m:pid:[1]", "linux:m:pid:[2]"
	tests := []struct {
		name string
		e    Entry
		want liveness
	}{
		{"a live pid with its start time is alive", Entry{PID: child.Process.Pid, ProcStart: strconv.FormatUint(ticks, 10), PidDomain: ours}, livenessAlive},
		{"a live pid with another start time is recycled", Entry{PID: child.Process.Pid, ProcStart: "1", PidDomain: ours}, livenessRecycled},
		{"a live pid with an empty start time (present, not absent) is recycled", Entry{PID: child.Process.Pid, PidDomain: ours, hasProcStart: true}, livenessRecycled},
		{"a gone pid is dead", Entry{PID: dead.Process.Pid, ProcStart: "1", PidDomain: ours}, livenessDead},
		{"another pid namespace cannot be judged", Entry{PID: dead.Process.Pid, ProcStart: "1", PidDomain: other}, livenessUnknown},
		{"another pid namespace cannot be judged even for a live pid", Entry{PID: child.Process.Pid, ProcStart: "1", PidDomain: other}, livenessUnknown},
		{"an entry without pid domain cannot be judged (the real CLI probes it)", Entry{PID: dead.Process.Pid, ProcStart: "1"}, livenessUnknown},
		{"an empty pid domain is another one", Entry{PID: dead.Process.Pid, ProcStart: "1", hasPidDomain: true}, livenessUnknown},
		{"a live pid without a start time cannot be judged", Entry{PID: child.Process.Pid, PidDomain: ours}, livenessUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.checkProc(tt.e); got != tt.want {
				t.Fatalf("checkProc = %v, want %v", got, tt.want)
			}
		})
	}
}
