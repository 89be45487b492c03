package graph

import (
	"strings"
	"testing"

	"github.com/zkgen/zkgen/spec"
)

const example = `version: 1
package: coord
root: /app
types:
  Job: {fields: {name: string}}
resources:
  order_lock: {kind: lock, path: "/locks/orders/{shard:int}"}
  table_lock: {kind: rwlock, path: "/locks/tables/{table:string}", revocable: {force_after: 5s}}
  slots:      {kind: semaphore, path: /semaphores/slots, leases: 3}
  tasks:      {kind: priority_queue, path: /queues/tasks, item: Job, priorities: [urgent, bulk]}
  deploy:     {kind: two_phase_commit, path: "/tx/{id:string}", participants: [db, "cache"]}
  top:        {kind: barrier, path: /top}
`

func parse(t *testing.T) *spec.Spec {
	s, err := spec.Parse("zkgen.yaml", []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMermaid(t *testing.T) {
	want := `flowchart LR
  subgraph root["/app"]
    subgraph g0["/locks"]
      order_lock["<b>order_lock</b> · lock<br/>/locks/orders/{shard:int}"]
      table_lock["<b>table_lock</b> · rwlock<br/>/locks/tables/{table:string}<br/>revocable, force after 5s"]
    end
    subgraph g1["/semaphores"]
      slots["<b>slots</b> · semaphore<br/>/semaphores/slots<br/>leases: 3"]
    end
    subgraph g2["/queues"]
      tasks["<b>tasks</b> · priority_queue<br/>/queues/tasks<br/>item: Job<br/>priorities: urgent #gt; bulk"]
    end
    subgraph g3["/tx"]
      deploy["<b>deploy</b> · two_phase_commit<br/>/tx/{id:string}<br/>participants: db, cache"]
    end
    subgraph g4["/"]
      top["<b>top</b> · barrier<br/>/top"]
    end
  end
`
	if got := Mermaid(parse(t)); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestDOT(t *testing.T) {
	got := DOT(parse(t))
	for _, frag := range []string{
		"digraph zkgen {",
		`subgraph cluster_root {` + "\n" + `    label="/app";`,
		`order_lock [label="order_lock (lock)\n/locks/orders/{shard:int}"];`,
		`slots [label="slots (semaphore)\n/semaphores/slots\nleases: 3"];`,
		`label="/queues";`,
	} {
		if !strings.Contains(got, frag) {
			t.Errorf("missing %q in:\n%s", frag, got)
		}
	}
	if strings.Count(got, "{") != strings.Count(got, "}") {
		t.Errorf("unbalanced braces:\n%s", got)
	}
}
