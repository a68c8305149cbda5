package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/api"
)

func TestResolveTakesAUniqueStartOfAnID(t *testing.T) {
	ids := []string{"3f2a9c1e-aaaa", "3f2b0000-bbbb", "pe1fd19"}
	tests := []struct {
		name, typed, want string
		ok, ambiguous     bool
	}{
		{"a whole id", "3f2a9c1e-aaaa", "3f2a9c1e-aaaa", true, false},
		{"a unique start", "3f2a", "3f2a9c1e-aaaa", true, false},
		{"a start in capitals", "PE1F", "pe1fd19", true, false},
		{"a start two ids share", "3f2", "", false, true},
		{"no such id", "99", "", false, false},
		{"nothing typed", " ", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := Resolve(tt.typed, ids)
			var ae *AmbiguousError
			if got != tt.want || ok != tt.ok || errors.As(err, &ae) != tt.ambiguous {
				t.Fatalf("Resolve(%q) = %q, %v, %v", tt.typed, got, ok, err)
			}
			if tt.ambiguous && (len(ae.IDs) != 2 || !strings.Contains(err.Error(), "type more")) {
				t.Fatalf("ambiguous error %v", err)
			}
		})
	}
}

func TestSuggestFindsNamesCloseToATypo(t *testing.T) {
	names := []string{"--wait", "--timeout", "--json", "--state-dir"}
	for typed, want := range map[string]string{"--wiat": "--wait", "--jsno": "--json", "--state": "--state-dir", "--zzzzzz": ""} {
		if got := strings.Join(Suggest(typed, names), ","); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", typed, got, want)
		}
	}
}

func TestHintsKeepANonDefaultStateDir(t *testing.T) {
	o := &IO{StateDir: "/srv/my gw", DefaultStateDir: "/home/u/.local/state/gateway"}
	if got := o.Cmd("held"); got != "gateway held --state-dir '/srv/my gw'" {
		t.Errorf("Cmd = %q", got)
	}
	var b bytes.Buffer
	fmt.Fprint(o.hinted(&b), "answer: gateway allow p1 | gateway deny p1 --message TEXT\n")
	if want := "answer: gateway --state-dir '/srv/my gw' allow p1 | gateway --state-dir '/srv/my gw' deny p1 --message TEXT\n"; b.String() != want {
		t.Errorf("hinted = %q", b.String())
	}
	o.StateDir = o.DefaultStateDir
	if got := o.Cmd("held"); got != "gateway held" {
		t.Errorf("Cmd with the default dir = %q", got)
	}
}

func TestReportPrintsOneErrorShape(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		exit     int
		code     string
		jsonOnly bool
	}{
		{"a usage error", Usagef("--mode %q: want bypass or prompting", "x"), ExitUsage, CodeUsage, false},
		{"the gateway's answer keeps its code", &api.APIError{Status: 409, Body: api.Error{Error: "ambiguous", Code: api.CodeAmbiguous, Candidates: []string{"a", "b"}}}, ExitError, api.CodeAmbiguous, false},
		{"any other failure", errors.New("disk full"), ExitError, CodeFailed, false},
		{"an unreachable gateway", fmt.Errorf("gateway not reachable: %w", &net.OpError{Op: "dial", Net: "unix", Err: errors.New("no such file")}), ExitError, CodeUnreachable, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if got := Report(&IO{Stdout: &out, Stderr: &errb, JSON: true}, tt.err); got != tt.exit {
				t.Fatalf("exit %d, want %d", got, tt.exit)
			}
			var body api.Error
			if err := json.Unmarshal(out.Bytes(), &body); err != nil || body.Code != tt.code || body.Error == "" || errb.Len() != 0 {
				t.Fatalf("stdout %q, stderr %q; want {error, code: %s}", out.String(), errb.String(), tt.code)
			}
			out.Reset()
			Report(&IO{Stdout: &out, Stderr: &errb}, tt.err)
			if out.Len() != 0 || !strings.HasPrefix(errb.String(), "gateway: ") {
				t.Fatalf("without --json: stdout %q, stderr %q", out.String(), errb.String())
			}
		})
	}
	var out bytes.Buffer
	if got := Report(&IO{Stdout: &out, JSON: true}, Exit(ExitPending)); got != ExitPending || out.Len() != 0 {
		t.Fatalf("a quiet exit printed %q (exit %d)", out.String(), got)
	}
}
