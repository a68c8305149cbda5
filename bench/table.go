package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Row is one line of the table: a path's figure through the gateway beside
// its counterpart's from the same run.
type Row struct {
	Path        string  // what is measured, with its unit: "API -> Claude, sequential (msg/s)"
	Gateway     string  // the gateway's figure
	Counterpart string  // the counterpart's figure and what it is: "10,400 (raw socket)"; "" when there is none
	Ratio       float64 // gateway over counterpart, in the sense Target reads it; 0 prints as "–"
	Target      string  // what is aimed at: ">= 0.50", "p99 < 1 ms"
	Met         Verdict // whether the figure meets Target
}

// Verdict says whether a row's figure meets its target.
type Verdict int

const (
	Unjudged Verdict = iota
	Met
	Missed
)

func (v Verdict) String() string {
	switch v {
	case Met:
		return "yes"
	case Missed:
		return "**no**"
	}
	return ""
}

// judge is Met when ok, else Missed.
func judge(ok bool) Verdict {
	if ok {
		return Met
	}
	return Missed
}

// suite is one group of rows measured together.
type suite struct {
	name string
	run  func(ctx context.Context, e *Env) ([]Row, error)
}

// suites run in the order they were registered; Go runs init funcs in the
// order of the files' names, so a suite file's name sets its place:
// suite_10_claude.go, suite_20_qwen.go, suite_30_bridge.go, and a new one
// at suite_NN_name.go.
var suites []suite

// register adds a suite. Call it from an init func in the suite's file.
func register(name string, run func(ctx context.Context, e *Env) ([]Row, error)) {
	suites = append(suites, suite{name: name, run: run})
}

func printTable(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| path | gateway | counterpart (same run) | ratio | target | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, r := range rows {
		ratio := "–"
		if r.Ratio != 0 && !math.IsInf(r.Ratio, 0) && !math.IsNaN(r.Ratio) {
			ratio = fmt.Sprintf("%.2f", r.Ratio)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", cell(r.Path), cell(r.Gateway), cell(r.Counterpart), ratio, cell(r.Target), r.Met)
	}
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// Latencies are one path's timed operations.
type Latencies []time.Duration

// P is the q-quantile (0 < q <= 1), by nearest rank.
func (l Latencies) P(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// Rate is n operations over a wall-clock span.
type Rate struct {
	N    int
	Span time.Duration
}

// PerSec is the rate in operations per second.
func (r Rate) PerSec() float64 {
	if r.Span <= 0 {
		return 0
	}
	return float64(r.N) / r.Span.Seconds()
}

func (r Rate) String() string { return fmt.Sprintf("%s msg/s", thousands(r.PerSec())) }

// ratio is a/b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// thousands prints v rounded, with commas: 10400 -> "10,400".
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// ms prints a duration in milliseconds, µs below 1 ms.
func ms(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%d µs", d.Microseconds())
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// rateRow compares two rates: ratio gateway/counterpart, met at >= want.
func rateRow(path string, gw, cp Rate, cpName string, want float64) Row {
	r := ratio(gw.PerSec(), cp.PerSec())
	return Row{Path: path, Gateway: gw.String(), Counterpart: fmt.Sprintf("%s (%s)", cp, cpName), Ratio: r,
		Target: fmt.Sprintf(">= %.2gx", want), Met: judge(r >= want)}
}

// latencyRow prints p50 and p99 of both; the ratio is of the p50s; met
// when the gateway's quantile q is under limit.
func latencyRow(path string, gw, cp Latencies, cpName string, q float64, limit time.Duration) Row {
	row := Row{Path: path, Gateway: fmt.Sprintf("p50 %s, p99 %s", ms(gw.P(0.5)), ms(gw.P(0.99))),
		Ratio: ratio(float64(gw.P(0.5)), float64(cp.P(0.5)))}
	if len(cp) > 0 {
		row.Counterpart = fmt.Sprintf("p50 %s, p99 %s (%s)", ms(cp.P(0.5)), ms(cp.P(0.99)), cpName)
	}
	if limit > 0 {
		row.Target = fmt.Sprintf("p%d < %s", int(q*100), ms(limit))
		row.Met = judge(gw.P(q) < limit)
	}
	return row
}

func numCPU() int { return runtime.NumCPU() }

func machine() string { return runtime.GOOS + "/" + runtime.GOARCH + ", " + runtime.Version() }
