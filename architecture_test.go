// The import rules ARCHITECTURE.md states, checked against the code: every
// package of ours must match a rule, and may import (outside its tests) only
// what its rule allows. The rules are read from ARCHITECTURE.md itself, so
// the document and the check cannot drift apart.
package gateway_test

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/sessiongateway/gateway"

// rule says what one package, or a subtree ("pkg/..."), may import of ours.
type rule struct {
	pattern string
	allow   []string // patterns; "*" is anything of ours
}

func matches(pattern, pkg string) bool {
	if pattern == "*" {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pattern == pkg
}

// ruleFor is the first rule whose pattern matches pkg.
func ruleFor(rules []rule, pkg string) (rule, bool) {
	for _, r := range rules {
		if matches(r.pattern, pkg) {
			return r, true
		}
	}
	return rule{}, false
}

// violations lists every import the rules forbid, and every package no rule
// covers. A package may import only what its rule names, its own subpackages
// included.
func violations(rules []rule, imports map[string][]string) []string {
	var out []string
	pkgs := make([]string, 0, len(imports))
	for p := range imports {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	for _, p := range pkgs {
		r, ok := ruleFor(rules, p)
		if !ok {
			out = append(out, fmt.Sprintf("%s: no import rule covers it (add one to ARCHITECTURE.md)", p))
			continue
		}
		for _, imp := range imports[p] {
			if !slices.ContainsFunc(r.allow, func(a string) bool { return matches(a, imp) }) {
				out = append(out, fmt.Sprintf("%s imports %s, which its rule %q does not allow", p, imp, r.pattern))
			}
		}
	}
	return out
}

// readRules parses the first ```text block after the "## Import rules"
// heading: one rule a line, "PATTERN  ALLOWED...", "-" for nothing.
func readRules(doc string) ([]rule, error) {
	_, rest, ok := strings.Cut(doc, "\n## Import rules")
	if !ok {
		return nil, fmt.Errorf("no \"## Import rules\" heading")
	}
	_, rest, ok = strings.Cut(rest, "```text\n")
	if !ok {
		return nil, fmt.Errorf("no ```text block under the import rules")
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		return nil, fmt.Errorf("the import rules block is not closed")
	}
	var rules []rule
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("rule %q names nothing it may import (write - for nothing)", line)
		}
		r := rule{pattern: f[0]}
		if f[1] != "-" {
			r.allow = f[1:]
		}
		rules = append(rules, r)
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("the import rules block is empty")
	}
	return rules, nil
}

// ourImports maps each package directory of the module (relative path) to the
// packages of ours its non-test files import, whatever their build tags.
func ourImports(root string) (map[string][]string, error) {
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, s := range f.Imports {
			imp, err := strconv.Unquote(s.Path.Value)
			if err != nil {
				return err
			}
			if ours, ok := strings.CutPrefix(imp, module+"/"); ok && !slices.Contains(out[pkg], ours) {
				out[pkg] = append(out[pkg], ours)
			}
		}
		return nil
	})
	return out, err
}

func TestImportRules(t *testing.T) {
	doc, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := readRules(string(doc))
	if err != nil {
		t.Fatalf("ARCHITECTURE.md: %v", err)
	}
	imports, err := ourImports(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 10 {
		t.Fatalf("found only %d packages; is the walk broken? %v", len(imports), imports)
	}
	for _, v := range violations(rules, imports) {
		t.Error(v)
	}
	t.Run("every rule still names a package that exists", func(t *testing.T) {
		for _, r := range rules {
			if !slices.ContainsFunc(keys(imports), func(p string) bool { return matches(r.pattern, p) }) {
				t.Errorf("rule %q matches no package: remove it from ARCHITECTURE.md", r.pattern)
			}
		}
	})
}

func keys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestTheImportCheckCatchesWhatItShould(t *testing.T) {
	rules := []rule{
		{pattern: "message"},
		{pattern: "leg/...", allow: []string{"message", "internal/..."}},
		{pattern: "cmd/gateway", allow: []string{"*"}},
	}
	tests := []struct {
		name    string
		imports map[string][]string
		want    int
	}{
		{"a package importing only what its rule allows passes", map[string][]string{"leg/claude": {"message", "internal/clock"}}, 0},
		{"a package that may import nothing and imports something fails", map[string][]string{"message": {"internal/clock"}}, 1},
		{"a leg importing the router fails", map[string][]string{"leg/claude": {"message", "router"}}, 1},
		{"a package no rule covers fails", map[string][]string{"router": nil}, 1},
		{"a star allows anything", map[string][]string{"cmd/gateway": {"router", "leg/uds"}}, 0},
		{"a subtree pattern covers its root", map[string][]string{"leg": {"message"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := violations(rules, tt.imports); len(got) != tt.want {
				t.Fatalf("got %d violations %q, want %d", len(got), got, tt.want)
			}
		})
	}
	t.Run("the rules block parses: first match wins and - allows nothing", func(t *testing.T) {
		got, err := readRules("# x\n\n## Import rules\n\n```text\nmessage  -   # nothing\napi  router message\n```\n")
		if err != nil {
			t.Fatal(err)
		}
		want := []rule{{pattern: "message"}, {pattern: "api", allow: []string{"router", "message"}}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
	t.Run("a path is not a subtree of a sibling with the same prefix", func(t *testing.T) {
		if matches("leg/uds/...", "leg/udsx") {
			t.Fatal("leg/udsx matched leg/uds/...")
		}
	})
}
