// Package benchplot turns the raw output of the scale sweeps (the
// BenchmarkSweep* benchmarks of runtime/bench, in the Go benchmark format)
// into charts and tables: one chart per recipe and metric, the metric
// against the sweep's size N, one line per implementation.
//
// A sweep's benchmark is named BenchmarkSweep<Recipe>/impl=<impl>/n=<N>,
// in any order of its key=value parts after the first. The recipe is the
// part after "Sweep", in lower case with a dash between words
// (SweepDoubleBarrier: double-barrier); a line is the impl= value, with
// any other key=value parts added to its label (impl=zkgen/op=put: "zkgen
// op=put"); x is the n= value. Results of the same benchmark repeated
// (-count) are reduced to their median. Times per operation (ns/op) are
// shown in milliseconds (ms/op), the scale of a ZooKeeper round trip.
package benchplot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/perf/benchfmt"
)

// Prefix is how a sweep benchmark's name starts.
const Prefix = "BenchmarkSweep"

// namePrefix is Prefix as benchfmt gives the name, without "Benchmark".
const namePrefix = "Sweep"

// Point is one measurement: a metric of one line of one recipe at one N.
type Point struct {
	Recipe string  // "lock", "double-barrier"
	Line   string  // "zkgen", "curator", "zkgen op=put"
	N      float64 // the sweep's size
	Unit   string  // "p50-ms", "req/op", "ns/op"
	Value  float64
}

// Series is one line of a chart: its values at each N, N ascending.
type Series struct {
	Line string
	N    []float64
	V    []float64
}

// Chart is one recipe's metric against N, one series per line.
type Chart struct {
	Recipe string
	Unit   string
	Series []Series
}

// Parse reads Go benchmark output from r (name is its file name, for
// errors) and returns the measurements of its sweep benchmarks. Lines that
// are not benchmark results (goos:, PASS, logs) are skipped, as are
// benchmarks whose name does not start with Prefix. A sweep result without
// an impl= or a numeric n= part is an error that names its line.
func Parse(r io.Reader, name string) ([]Point, error) {
	rd := benchfmt.NewReader(r, name)
	var pts []Point
	for rd.Scan() {
		res, ok := rd.Result().(*benchfmt.Result)
		if !ok {
			continue // unit metadata; syntax errors are other output
		}
		base, parts := res.Name.Parts()
		if !bytes.HasPrefix(base, []byte(namePrefix)) || len(base) == len(namePrefix) {
			continue
		}
		file, line := res.Pos()
		recipe := Kebab(string(base[len(namePrefix):]))
		var impl, nstr string
		var extra []string
		for _, p := range parts {
			if p[0] != '/' {
				continue // -GOMAXPROCS
			}
			k, v, ok := strings.Cut(string(p[1:]), "=")
			switch {
			case !ok:
				extra = append(extra, k)
			case k == "impl":
				impl = v
			case k == "n":
				nstr = v
			default:
				extra = append(extra, k+"="+v)
			}
		}
		if impl == "" {
			return nil, fmt.Errorf("%s:%d: Benchmark%s has no impl= part", file, line, res.Name)
		}
		n, err := strconv.ParseFloat(nstr, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s:%d: Benchmark%s has no n= part with a positive number", file, line, res.Name)
		}
		label := strings.Join(append([]string{impl}, extra...), " ")
		for _, v := range res.Values {
			unit, val := v.Unit, v.Value
			if v.OrigUnit != "" { // as written, not tidied (sec/op for ns/op)
				unit, val = v.OrigUnit, v.OrigValue
			}
			if unit == "ns/op" {
				unit, val = "ms/op", val/1e6
			}
			pts = append(pts, Point{Recipe: recipe, Line: label, N: n, Unit: unit, Value: val})
		}
	}
	if err := rd.Err(); err != nil {
		return nil, err
	}
	return pts, nil
}

// Kebab turns a CamelCase name into lower case words joined by dashes:
// "DoubleBarrier" is "double-barrier", "TwoPC" is "two-pc".
func Kebab(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 {
			prevLower := unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if prevLower || (unicode.IsUpper(rs[i-1]) && nextLower) {
				b.WriteByte('-')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// lineOrder puts the known implementations first, zkgen leading, so that
// each keeps its colour across charts; others follow by name.
var lineOrder = []string{"zkgen", "gozk", "curator", "kazoo"}

func lineRank(l string) (int, string) {
	impl, _, _ := strings.Cut(l, " ")
	if i := slices.Index(lineOrder, impl); i >= 0 {
		return i, l
	}
	return len(lineOrder), l
}

func compareLines(a, b string) int {
	ra, la := lineRank(a)
	rb, lb := lineRank(b)
	if ra != rb {
		return ra - rb
	}
	return strings.Compare(la, lb)
}

// Group collects points into charts, one per recipe and unit, sorted by
// recipe then unit; each chart's series are in a fixed order (zkgen, gozk,
// curator, kazoo, then the others by name) with N ascending, repeated
// measurements reduced to their median.
func Group(pts []Point) []Chart {
	type key struct{ recipe, unit, line string }
	vals := map[key]map[float64][]float64{}
	for _, p := range pts {
		k := key{p.Recipe, p.Unit, p.Line}
		if vals[k] == nil {
			vals[k] = map[float64][]float64{}
		}
		vals[k][p.N] = append(vals[k][p.N], p.Value)
	}
	charts := map[[2]string]*Chart{}
	for k, byN := range vals {
		ck := [2]string{k.recipe, k.unit}
		c := charts[ck]
		if c == nil {
			c = &Chart{Recipe: k.recipe, Unit: k.unit}
			charts[ck] = c
		}
		s := Series{Line: k.line}
		for n := range byN {
			s.N = append(s.N, n)
		}
		slices.Sort(s.N)
		for _, n := range s.N {
			s.V = append(s.V, median(byN[n]))
		}
		c.Series = append(c.Series, s)
	}
	out := make([]Chart, 0, len(charts))
	for _, c := range charts {
		slices.SortFunc(c.Series, func(a, b Series) int { return compareLines(a.Line, b.Line) })
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Chart) int {
		if a.Recipe != b.Recipe {
			return strings.Compare(a.Recipe, b.Recipe)
		}
		return strings.Compare(a.Unit, b.Unit)
	})
	return out
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// FileName is the chart's file name without extension: the recipe and the
// unit, the unit's "/" spelled "-per-" and other characters that do not
// belong in a file name dropped ("lock-req-per-op", "lock-p50-ms").
func (c Chart) FileName() string {
	u := strings.ReplaceAll(c.Unit, "/", "-per-")
	u = strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return -1
	}, u)
	return c.Recipe + "-" + u
}

// Ns returns every N measured by any of the chart's series, ascending.
func (c Chart) Ns() []float64 {
	var ns []float64
	for _, s := range c.Series {
		for _, n := range s.N {
			if !slices.Contains(ns, n) {
				ns = append(ns, n)
			}
		}
	}
	slices.Sort(ns)
	return ns
}

// LogX reports whether the chart's x axis is drawn in log scale: when N
// spans at least a factor of 10.
func (c Chart) LogX() bool {
	ns := c.Ns()
	return len(ns) > 1 && ns[0] > 0 && ns[len(ns)-1]/ns[0] >= 10
}

// Value returns the series line's value at n, if it was measured.
func (c Chart) Value(line string, n float64) (float64, bool) {
	for _, s := range c.Series {
		if s.Line != line {
			continue
		}
		if i := slices.Index(s.N, n); i >= 0 {
			return s.V[i], true
		}
	}
	return 0, false
}

// Table writes the charts of one recipe as one markdown table: a row per
// N and line (N ascending, lines in the charts' order), a column per chart
// (its unit), "–" where a line was not measured.
func Table(w io.Writer, charts []Chart) error {
	if len(charts) == 0 {
		return errors.New("benchplot: no charts for a table")
	}
	var lines []string
	var ns []float64
	for _, c := range charts {
		for _, s := range c.Series {
			if !slices.Contains(lines, s.Line) {
				lines = append(lines, s.Line)
			}
		}
		for _, n := range c.Ns() {
			if !slices.Contains(ns, n) {
				ns = append(ns, n)
			}
		}
	}
	slices.SortStableFunc(lines, compareLines)
	slices.Sort(ns)
	var b strings.Builder
	b.WriteString("| N | impl |")
	for _, c := range charts {
		fmt.Fprintf(&b, " %s |", c.Unit)
	}
	b.WriteString("\n|--:|:--|")
	for range charts {
		b.WriteString("--:|")
	}
	b.WriteString("\n")
	for _, n := range ns {
		for _, l := range lines {
			row := fmt.Sprintf("| %s | %s |", strconv.FormatFloat(n, 'f', -1, 64), l)
			any := false
			for _, c := range charts {
				if v, ok := c.Value(l, n); ok {
					row += " " + Format(v) + " |"
					any = true
				} else {
					row += " – |"
				}
			}
			if any {
				b.WriteString(row + "\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Format writes v with three significant digits, without an exponent for
// the sizes a sweep has (12.3, 0.0456, 1230).
func Format(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	digits := 2 - int(math.Floor(math.Log10(math.Abs(v))))
	if digits < 0 {
		digits = 0
	}
	return strconv.FormatFloat(v, 'f', digits, 64)
}
