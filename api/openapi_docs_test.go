package api

import (
	"os"
	"strings"
	"testing"
)

// scopeCell is what docs/api.md's route table says a route needs.
func scopeCell(rt route) string {
	switch {
	case rt.scope != 0:
		return rt.scope.String()
	case rt.anon:
		return "none (rate limited)"
	}
	return "none"
}

// routeRows are docs/api.md's route table rows, one per route.
func routeRows() string {
	var b strings.Builder
	for _, rt := range routes {
		b.WriteString("| `" + rt.pattern() + "` | " + scopeCell(rt) + " | " + summaryOf(rt.summary) + " |\n")
	}
	return b.String()
}

const readmeTableHead = "| Route | Scope | What |\n|---|---|---|\n"

func TestTheAPIPageSaysWhichRoutesNeedWhichScope(t *testing.T) {
	const readme = "../docs/api.md"
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, readmeTableHead)
	if start < 0 {
		t.Fatalf("docs/api.md has no route table (%q)", readmeTableHead)
	}
	start += len(readmeTableHead)
	end := strings.Index(text[start:], "| `/mcp` |")
	if end < 0 {
		t.Fatal("docs/api.md's route table does not end with the /mcp row")
	}
	end += start
	want := routeRows()
	if *update {
		text = text[:start] + want + text[end:]
		if err := os.WriteFile(readme, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := text[start:end]; got != want {
		t.Errorf("docs/api.md's route table is not the route table (run go generate ./api, or go test ./api -run TestTheAPIPageSaysWhichRoutesNeedWhichScope -update):\n got:\n%s\nwant:\n%s", got, want)
	}
}
