package cli

// Usage errors: wrong arguments, misspelt commands and flags, said in one
// set of words whichever parser found them.

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Nargs checks a command's positional arguments, naming them when wrong.
func Nargs(lo, hi int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < lo || (hi >= 0 && len(args) > hi) {
			return Usagef("%s takes %s; %s", CmdName(c), argWords(c), given(len(args)))
		}
		return nil
	}
}

func given(n int) string {
	if n == 1 {
		return "1 was given"
	}
	return fmt.Sprintf("%d were given", n)
}

func argWords(c *cobra.Command) string {
	_, words, _ := strings.Cut(c.Use, " ")
	words = strings.TrimSpace(strings.ReplaceAll(words, "[flags]", ""))
	if words == "" {
		return "no arguments"
	}
	return words
}

// SubSuggestions are c's subcommands a misspelt one may have meant: the
// same Suggest as for flags, so both are near in the same way.
func SubSuggestions(c *cobra.Command, typed string) []string {
	var names []string
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
		}
	}
	return Suggest(typed, names)
}

func DidYouMean(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return "; did you mean " + strings.Join(s, " or ") + "?"
}

var unknownFlag = regexp.MustCompile(`^(?:unknown flag: --|unknown shorthand flag: '.' in -)([^ =]+)`)

// stdFlagError is the standard library's words for serve's flags.
var stdFlagError = regexp.MustCompile(`^(flag provided but not defined|flag needs an argument): -{1,2}(.+)$`)

// FlagHint says serve's flag errors in the other commands' words and adds
// the flags that a misspelt one may have meant or, for --json, the
// commands that take it.
func FlagHint(c *cobra.Command, err error) error {
	if m := stdFlagError.FindStringSubmatch(err.Error()); m != nil {
		what := "unknown flag"
		if m[1] == "flag needs an argument" {
			what = m[1]
		}
		err = errors.New(what + ": --" + m[2])
	}
	m := unknownFlag.FindStringSubmatch(err.Error())
	if c == nil || m == nil {
		return err
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, "--"+f.Name) })
	c.InheritedFlags().VisitAll(func(f *pflag.Flag) { names = append(names, "--"+f.Name) })
	err = fmt.Errorf("%w%s", err, DidYouMean(Suggest("--"+m[1], names)))
	if m[1] == "json" { // a common slip: say where it belongs
		var takers []string
		// A group whose commands all take it is named once, "gateway remote ...".
		EachCommand(c.Root(), func(s *cobra.Command) {
			if s.Hidden || s.LocalFlags().Lookup("json") == nil {
				return
			}
			p := s.CommandPath()
			if s.HasSubCommands() {
				p += " ..."
			}
			takers = append(takers, p)
		})
		err = fmt.Errorf("%w; --json is taken by: %s", err, strings.Join(takers, ", "))
	}
	return err
}

// EachCommand calls f on c and every command under it, parents first.
func EachCommand(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, s := range c.Commands() {
		EachCommand(s, f)
	}
}

// WantsJSON says whether a command line that did not parse asked for JSON,
// so even its usage error comes in the one error shape.
func WantsJSON(args []string) bool {
	for _, a := range args {
		switch a {
		case "--json", "-json", "--json=true", "-json=true":
			return true
		case "--":
			return false
		}
	}
	return false
}

// CmdName is c's path without the binary's name, which every message
// already starts with ("gateway: ...").
func CmdName(c *cobra.Command) string { return strings.TrimPrefix(c.CommandPath(), "gateway ") }
