// Command bench measures the gateway as a whole process: each path runs
// through the real gateway binary beside its raw counterpart, in the same
// run, and the figures come out as one Markdown table (path, gateway,
// counterpart, ratio, target). Figures are for people to read; nothing
// here fails on a slow figure, only on a path that does not work.
//
//	go run ./bench                 # the figures (a minute or two)
//	go run ./bench -short          # a few seconds: what CI runs so the harness cannot rot
//	go run ./bench -only claude    # the suites whose name matches
//	go run ./bench -profile DIR    # also CPU and allocation profiles of the gateway under load
//
// The bench runs itself as the HTTP floor's server (see httpfloor.go):
// `bench http-floor SOCKET SINK MODE` is not for people.
//
// A suite is one file, suite_NN_name.go, holding a func registered from
// init (see register): it starts what it needs through the Env (a World,
// a gateway binary, sinks; all stopped when it returns) and returns its
// rows (see Row, rateRow, latencyRow). NN orders the table.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"time"
)

func main() {
	if len(os.Args) == 5 && os.Args[1] == floorCommand {
		if err := serveFloor(os.Args[2], os.Args[3], os.Args[4]); err != nil {
			fmt.Fprintln(os.Stderr, "bench: http floor:", err)
			os.Exit(1)
		}
		return
	}
	short := flag.Bool("short", false, "a few seconds in all: enough to show the harness works, not for figures")
	only := flag.String("only", "", "run only the suites whose name matches this regular expression")
	bin := flag.String("gateway", "", "the gateway binary to measure (default: build ./cmd/gateway)")
	profile := flag.String("profile", "", "write CPU and allocation profiles of each gateway under load into this directory")
	flag.Parse()
	os.Exit(run(*short, *only, *bin, *profile))
}

func run(short bool, only, bin, profile string) int {
	match, err := regexp.Compile(only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: -only:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if bin == "" {
		dir, err := os.MkdirTemp("", "gwbench-bin")
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		if bin, err = build(ctx, dir); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
	}
	var rows []Row
	failed := false
	started := time.Now()
	for _, s := range suites {
		if !match.MatchString(s.name) {
			continue
		}
		e := &Env{Short: short, Bin: bin, ProfileDir: profile, suite: s.name}
		t0 := time.Now()
		got, err := s.run(ctx, e)
		e.close()
		if err != nil {
			failed = true
			fmt.Fprintf(os.Stderr, "bench: %s: %v\n", s.name, err)
			got = append(got, Row{Path: s.name, Gateway: "error: " + err.Error()})
		}
		fmt.Fprintf(os.Stderr, "bench: %s done in %v\n", s.name, time.Since(t0).Round(time.Millisecond))
		rows = append(rows, got...)
	}
	printTable(os.Stdout, rows)
	fmt.Fprintf(os.Stdout, "\n%s, %d CPUs, %s in all%s\n", machine(), numCPU(), time.Since(started).Round(100*time.Millisecond), shortNote(short))
	if failed {
		return 1
	}
	return 0
}

func shortNote(short bool) string {
	if short {
		return " (-short: too few messages for figures)"
	}
	return ""
}
