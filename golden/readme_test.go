package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README shows the example topology as a Mermaid picture; it must be
// what 'zkgen graph' draws for generated_example/zkgen.yaml now.
func TestReadmeGraph(t *testing.T) {
	const begin, end = "<!-- zkgen graph -f generated_example/zkgen.yaml: begin -->\n", "<!-- zkgen graph: end -->\n"
	readme := filepath.Join("..", "README.md")
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %q ... %q block", begin, end)
	}
	t.Chdir(filepath.Join("..", "generated_example"))
	code, stdout, stderr := run("graph")
	if code != 0 {
		t.Fatalf("zkgen graph: exit %d: %s", code, stderr)
	}
	want := "```mermaid\n" + stdout + "```\n"
	got := text[i+len(begin) : j]
	if got == want {
		return
	}
	if *update {
		text = text[:i+len(begin)] + want + text[j:]
		if err := os.WriteFile(filepath.Join("..", "README.md"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the README's topology picture is stale (go test ./golden -update rewrites it):\ngot:\n%s\nwant:\n%s", got, want)
}
