package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkgen/zkgen/internal/breaking"
)

// The docs show the example topology as a Mermaid picture (docs/spec.md);
// it must be what 'zkgen graph' draws for generated_example/zkgen.yaml now.
func TestReadmeGraph(t *testing.T) {
	const begin, end = "<!-- zkgen graph -f generated_example/zkgen.yaml: begin -->\n", "<!-- zkgen graph: end -->\n"
	t.Chdir(filepath.Join("..", "generated_example"))
	code, stdout, stderr := run("graph")
	if code != 0 {
		t.Fatalf("zkgen graph: exit %d: %s", code, stderr)
	}
	readmeBlock(t, filepath.Join("..", "docs", "spec.md"), begin, end, "```mermaid\n"+stdout+"```\n", "topology picture")
}

// The docs' table of what zkgen breaking reports (docs/deploy-safety.md) is
// its rules table.
func TestReadmeBreakingRules(t *testing.T) {
	const begin, end = "<!-- zkgen breaking rules: begin -->\n", "<!-- zkgen breaking rules: end -->\n"
	var b strings.Builder
	b.WriteString("| field | kinds | breaking: reported | safe |\n|---|---|---|---|\n")
	for _, r := range breaking.Rules() {
		field := "(none of their own)"
		if r.Field != "" {
			field = "`" + strings.ReplaceAll(r.Field, ", ", "`, `") + "`"
		}
		kinds := "every kind"
		switch {
		case r.TopLevel:
			kinds = "top level"
		case r.Kinds != nil:
			ks := make([]string, len(r.Kinds))
			for i, k := range r.Kinds {
				ks[i] = string(k)
			}
			kinds = strings.Join(ks, ", ")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", field, kinds, cell(r.Breaks), cell(r.Safe))
	}
	readmeBlock(t, filepath.Join("..", "docs", "deploy-safety.md"), begin, end, b.String(), "table of zkgen breaking's rules")
}

// cell is a Markdown table cell: "—" when empty.
func cell(s string) string {
	if s == "" {
		return "—"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// readmeBlock checks that the text between the lines begin and end of the
// Markdown file at path is want; -update rewrites it.
func readmeBlock(t *testing.T, path, begin, end, want, what string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q block", path, begin, end)
	}
	got := text[i+len(begin) : j]
	if got == want {
		return
	}
	if *update {
		text = text[:i+len(begin)] + want + text[j:]
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the %s in %s is stale (go test ./golden -update rewrites it):\ngot:\n%s\nwant:\n%s", what, path, got, want)
}

// The docs' excerpt of the generated example (docs/spec.md): every line
// but the "..." ones is in the generated file, in the same order.
func TestReadmeGeneratedCode(t *testing.T) {
	const begin, end = "<!-- generated_example/coord/coord_zkgen.go excerpt: begin -->\n", "<!-- generated_example/coord/coord_zkgen.go excerpt: end -->\n"
	readme := readFile(t, filepath.Join("..", "docs", "spec.md"))
	i, j := strings.Index(readme, begin), strings.Index(readme, end)
	if i < 0 || j < i {
		t.Fatalf("docs/spec.md lacks the excerpt between %q and %q", begin, end)
	}
	block := strings.TrimSuffix(strings.TrimPrefix(readme[i+len(begin):j], "```go\n"), "```\n")
	gen := strings.Split(readFile(t, filepath.Join("..", "generated_example", "coord", "coord_zkgen.go")), "\n")
	at := 0
	for _, line := range strings.Split(strings.TrimSuffix(block, "\n"), "\n") {
		if strings.TrimSpace(line) == "// ..." || line == "" {
			continue
		}
		for at < len(gen) && gen[at] != line {
			at++
		}
		if at == len(gen) {
			t.Fatalf("README excerpt line %q is not in the generated file (after the lines before it)", line)
		}
		at++
	}
}
