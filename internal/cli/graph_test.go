package cli

import (
	"strings"
	"testing"

	"github.com/zkgen/zkgen/internal/graph"
	"github.com/zkgen/zkgen/spec"
)

func TestGraph(t *testing.T) {
	chdirTemp(t)
	// A kind that is not generated yet is drawn all the same.
	src := validSpec + "  later: {kind: counter, path: /counters/later}\n"
	writeFile(t, "zkgen.yaml", src)
	s, err := spec.Parse("zkgen.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	zkgen(t, "graph").want(t, ExitOK, str(graph.Mermaid(s)), empty)
	zkgen(t, "graph", "--format", "dot").want(t, ExitOK, str(graph.DOT(s)), empty)
	if !strings.Contains(graph.Mermaid(s), "later") {
		t.Fatal("the counter is missing from the graph")
	}
	r := zkgen(t, "graph", "--format", "png")
	r.want(t, ExitFailure, empty, nil)
	if !strings.Contains(r.stderr, `unknown --format "png"`) {
		t.Errorf("stderr: %s", r.stderr)
	}
	writeFile(t, "bad.yaml", "version: 1\npackage: Bad\n")
	if r := zkgen(t, "graph", "-f", "bad.yaml"); r.code != ExitFailure || !strings.HasPrefix(r.stderr, "bad.yaml:") {
		t.Errorf("bad spec: %+v", r)
	}
}

func TestSchemaCommand(t *testing.T) {
	zkgen(t, "schema").want(t, ExitOK, str(string(spec.SchemaJSON)), empty)
	chdirTemp(t)
	zkgen(t, "init").want(t, ExitOK, nil, nil)
	if got := readFile(t, "zkgen.yaml"); !strings.HasPrefix(got, "# yaml-language-server: $schema="+SchemaURL+"\n") {
		t.Fatalf("init wrote no schema modeline:\n%s", got)
	}
}
