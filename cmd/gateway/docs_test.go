package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The reference pages' tables are what people read: every command the
// binary knows is in docs/cli.md's commands table and every serve flag in a
// table of docs/configuration.md, and nothing they name is missing from the
// binary.

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	flagCell   = regexp.MustCompile("^\\| `--([a-z0-9-]+)")
)

const (
	cliPage    = "../../docs/cli.md"
	configPage = "../../docs/configuration.md"
)

// docSection is the page from heading to the next heading of the same
// level.
func docSection(t *testing.T, page, heading string) string {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no %q", page, heading)
	}
	level := heading[:strings.Index(heading, " ")+1]
	if i := strings.Index(rest, "\n"+level); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// commandPaths are the commands people call: every leaf, with its group's
// name ("tokens add"), and completion as one.
func commandPaths() []string {
	var out []string
	var walk func(c *cobra.Command, prefix string)
	walk = func(c *cobra.Command, prefix string) {
		for _, s := range c.Commands() {
			if !s.IsAvailableCommand() && s.Name() != "help" {
				continue
			}
			p := strings.TrimSpace(prefix + " " + s.Name())
			if s.HasSubCommands() && s.Name() != "completion" {
				walk(s, p)
				continue
			}
			out = append(out, p)
		}
	}
	root := (&app{e: &env{getenv: func(string) string { return "" }}}).root()
	root.InitDefaultHelpCmd() // added when the command line runs
	root.InitDefaultCompletionCmd()
	walk(root, "")
	return out
}

// commandRow is one row of docs/cli.md's commands table: its first cell, and
// the command each of the cell's backticked forms calls (its leading
// lower-case words, "tokens add").
type commandRow struct {
	cell     string
	commands [][]string
}

func commandRows(t *testing.T) []commandRow {
	t.Helper()
	word := regexp.MustCompile(`^[a-z][a-z-]*$`)
	var rows []commandRow
	for _, line := range strings.Split(docSection(t, cliPage, "## Commands"), "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `") || len(cells) < 2 {
			continue
		}
		r := commandRow{cell: cells[0]}
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			var words []string
			for _, w := range strings.Fields(m[1]) {
				if !word.MatchString(w) {
					break
				}
				words = append(words, w)
			}
			r.commands = append(r.commands, words)
		}
		rows = append(rows, r)
	}
	return rows
}

func TestTheCommandsTableMatchesTheBinary(t *testing.T) {
	documented := map[string]bool{}
	for _, r := range commandRows(t) {
		for _, words := range r.commands {
			documented[strings.Join(words, " ")] = true
		}
	}
	known := commandPaths()
	for _, p := range known {
		if !documented[p] {
			t.Errorf("gateway %s is not in docs/cli.md's commands table: add a row", p)
		}
	}
	for p := range documented {
		if !slices.Contains(known, p) {
			t.Errorf("docs/cli.md's commands table names gateway %s, which the binary does not know", p)
		}
	}
}

func TestTheConfigurationPageDocumentsEveryServeFlag(t *testing.T) {
	b, err := os.ReadFile(configPage)
	if err != nil {
		t.Fatal(err)
	}
	inTables := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if m := flagCell.FindStringSubmatch(line); m != nil {
			inTables[m[1]] = true
		}
	}
	serve, _, err := (&app{e: &env{getenv: func(string) string { return "" }}}).root().Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	serve.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && !f.Hidden && !inTables[f.Name] {
			t.Errorf("serve --%s is in no table of docs/configuration.md: add a row to \"## serve flags\"", f.Name)
		}
	})
	for _, line := range strings.Split(string(b), "\n") {
		if m := flagCell.FindStringSubmatch(line); m != nil && serve.Flags().Lookup(m[1]) == nil {
			t.Errorf("docs/configuration.md's flag tables name --%s, which serve does not take", m[1])
		}
	}
}

// Every flag of a command is named in a row of the commands table that
// names the command (serve's are in their own table), and a row names no
// flag its commands do not take.
func TestTheCommandsTableNamesEveryFlag(t *testing.T) {
	root := (&app{e: &env{getenv: func(string) string { return "" }}}).root()
	inherited := map[string]bool{} // the root's own: every command takes them
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) { inherited[f.Name] = true })
	rowFlag := regexp.MustCompile(`--([a-z0-9-]+)`)
	named := map[*cobra.Command]map[string]bool{} // flags named in the rows naming it
	for _, row := range commandRows(t) {
		inRow := map[string]bool{}
		for _, m := range rowFlag.FindAllStringSubmatch(row.cell, -1) {
			inRow[m[1]] = true
		}
		takes := map[string]bool{}
		for _, words := range row.commands {
			c, _, err := root.Find(words)
			if err != nil || c == root {
				continue
			}
			switch c.Name() {
			case "serve", "config", "help", "completion":
				continue // serve's flags have their own table; config takes them all
			}
			if named[c] == nil {
				named[c] = map[string]bool{}
			}
			for f := range inRow {
				named[c][f] = true
			}
			c.Flags().VisitAll(func(f *pflag.Flag) { takes[f.Name] = true })
		}
		for f := range inRow {
			if len(takes) > 0 && !takes[f] && !inherited[f] {
				t.Errorf("docs/cli.md's row %s names --%s, which none of its commands takes", row.cell, f)
			}
		}
	}
	for c, inRows := range named {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && !f.Hidden && !inherited[f.Name] && !inRows[f.Name] {
				t.Errorf("%s takes --%s, which its docs/cli.md row does not name", c.CommandPath(), f.Name)
			}
		})
	}
}
