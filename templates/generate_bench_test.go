package templates

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zkgen/zkgen/spec"
)

// bigSpec returns a spec of n resources of the generated kinds.
func bigSpec(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\npackage: big\nroot: /big\ntypes:\n  Member: {fields: {host: string, port: int}}\nresources:\n")
	kinds := []string{
		`{kind: lock, path: "/l%d/{shard:int}"}`,
		`{kind: rwlock, path: "/rw%d/{table:string}", revocable: {force_after: 5s}}`,
		`{kind: semaphore, path: /s%d, leases: 3}`,
		`{kind: election, path: /e%d, payload: Member}`,
		`{kind: group, path: /g%d, member: Member}`,
		`{kind: config, path: "/c%d/{name:string}", value: Member}`,
		`{kind: counter, path: /n%d}`,
		`{kind: two_phase_commit, path: "/tx%d/{id:string}", participants: [a, b, c]}`,
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  r%d: "+kinds[i%len(kinds)]+"\n", i, i)
	}
	return []byte(b.String())
}

// Parse and generate a 1,000-resource spec (the target: well under a second).
func BenchmarkGenerate1000(b *testing.B) {
	src := bigSpec(1000)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		s, err := spec.Parse("zkgen.yaml", src)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Generate(s); err != nil {
			b.Fatal(err)
		}
	}
}

func TestGenerateBigSpecDeterministic(t *testing.T) {
	s, err := spec.Parse("zkgen.yaml", bigSpec(200))
	if err != nil {
		t.Fatal(err)
	}
	a, err := Generate(s)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Generate(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(a[s.Output]) != string(c[s.Output]) {
		t.Fatal("two runs gave different bytes")
	}
}
