package benchplot

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
)

func parseFixture(t *testing.T) []Point {
	t.Helper()
	f, err := os.Open("testdata/sweep.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pts, err := Parse(f, "testdata/sweep.txt")
	if err != nil {
		t.Fatal(err)
	}
	return pts
}

// Parse keeps only the sweep benchmarks and reads recipe, line and N from
// their names, wherever the parts are.
func TestParse(t *testing.T) {
	pts := parseFixture(t)
	// 3 + 1 + 1 results of 4 values, one of 2, one of 2; not the
	// BenchmarkLockUncontended one.
	if len(pts) != 5*4+2+2 {
		t.Fatalf("%d points, want 24: %+v", len(pts), pts)
	}
	for _, want := range []Point{
		{Recipe: "double-barrier", Line: "zkgen op=enter", N: 10, Unit: "notify/op", Value: 1.5},
		{Recipe: "double-barrier", Line: "zkgen op=enter", N: 10, Unit: "ms/op", Value: 0.005},
	} {
		if !slices.Contains(pts, want) {
			t.Errorf("no %+v in %+v", want, pts)
		}
	}
	for _, p := range pts {
		if p.Recipe != "lock" && p.Recipe != "double-barrier" {
			t.Errorf("recipe %q", p.Recipe)
		}
	}
}

// Group makes one chart per recipe and unit, lines in the fixed order, N
// ascending, repeated results reduced to their median.
func TestGroup(t *testing.T) {
	charts := Group(parseFixture(t))
	var names []string
	for _, c := range charts {
		names = append(names, c.FileName())
	}
	wantNames := []string{"double-barrier-ms-per-op", "double-barrier-notify-per-op",
		"lock-ms-per-op", "lock-p50-ms", "lock-p99-ms", "lock-req-per-op"}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("charts %v, want %v", names, wantNames)
	}
	p50 := charts[3]
	var lines []string
	for _, s := range p50.Series {
		lines = append(lines, s.Line)
	}
	if !slices.Equal(lines, []string{"zkgen", "gozk", "curator"}) {
		t.Fatalf("lines %v", lines)
	}
	z := p50.Series[0]
	if !slices.Equal(z.N, []float64{8, 64}) || !slices.Equal(z.V, []float64{3, 2.2}) {
		t.Fatalf("zkgen series %+v, want N [8 64], the median 3 at 8", z)
	}
	if p50.LogX() {
		t.Error("N from 8 to 64 (a factor 8) drawn in log scale")
	}
	if wide := (Chart{Series: []Series{{N: []float64{8, 256}}}}); !wide.LogX() {
		t.Error("N from 8 to 256 not drawn in log scale")
	}
	if charts[0].LogX() {
		t.Error("a single N drawn in log scale")
	}
}

// A sweep result without impl= or n= is an error naming its line.
func TestParseErrors(t *testing.T) {
	for _, in := range []string{
		"BenchmarkSweepLock/n=8-2 1 100 ns/op\n",
		"BenchmarkSweepLock/impl=zkgen-2 1 100 ns/op\n",
		"BenchmarkSweepLock/impl=zkgen/n=x-2 1 100 ns/op\n",
	} {
		_, err := Parse(strings.NewReader("goos: linux\n"+in), "f.txt")
		if err == nil || !strings.Contains(err.Error(), "f.txt:2:") {
			t.Errorf("Parse(%q) = %v, want an error at f.txt:2", in, err)
		}
	}
}

func TestKebab(t *testing.T) {
	for in, want := range map[string]string{
		"Lock": "lock", "DoubleBarrier": "double-barrier", "TwoPC": "two-pc",
		"PriorityQueue": "priority-queue", "RWLock": "rw-lock", "Generator10": "generator10",
	} {
		if got := Kebab(in); got != want {
			t.Errorf("Kebab(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTable(t *testing.T) {
	var charts []Chart
	for _, c := range Group(parseFixture(t)) {
		if c.Recipe == "lock" && (c.Unit == "p50-ms" || c.Unit == "req/op") {
			charts = append(charts, c)
		}
	}
	var b bytes.Buffer
	if err := Table(&b, charts); err != nil {
		t.Fatal(err)
	}
	want := "| N | impl | p50-ms | req/op |\n" +
		"|--:|:--|--:|--:|\n" +
		"| 8 | zkgen | 3.00 | 5.00 |\n" +
		"| 8 | gozk | 2.50 | 6.00 |\n" +
		"| 64 | zkgen | 2.20 | 5.00 |\n" +
		"| 64 | curator | 2.80 | – |\n"
	if b.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestFormat(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 1234: "1234", 12.345: "12.3", 0.04567: "0.0457", 2: "2.00"} {
		if got := Format(v); got != want {
			t.Errorf("Format(%v) = %q, want %q", v, got, want)
		}
	}
}

// The SVG has the title, the axis labels and a legend entry per line.
func TestSVG(t *testing.T) {
	for _, c := range Group(parseFixture(t)) {
		if c.FileName() != "lock-p50-ms" {
			continue
		}
		svg, err := SVG(c)
		if err != nil {
			t.Fatal(err)
		}
		s := string(svg)
		for _, want := range []string{"<svg", "lock: p50-ms", "N (sweep size)", "median (ms)", ">zkgen<", ">gozk<", ">curator<"} {
			if !strings.Contains(s, want) {
				t.Errorf("SVG has no %q", want)
			}
		}
		return
	}
	t.Fatal("no lock-p50-ms chart")
}
