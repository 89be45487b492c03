// Command benchplot draws the scale sweeps' charts: it reads Go benchmark
// output holding BenchmarkSweep<Recipe>/impl=<impl>/n=<N> results (the
// files of runtime/bench/results/sweep) and writes, for each recipe and
// metric, an SVG chart of the metric against N with one line per impl
// (<out>/<recipe>-<metric>.svg, "/" in a metric spelled "-per-") and, for
// each recipe, a markdown table of all its metrics (<out>/<recipe>.md).
//
//	benchplot -out docs/charts runtime/bench/results/sweep/*.txt
//
// The standard allocation metrics (B/op, allocs/op) are left out unless
// -allocs is given.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zkgen/zkgen/internal/benchplot"
)

func main() {
	out := flag.String("out", "docs/charts", "directory for the charts and tables")
	allocs := flag.Bool("allocs", false, "also chart B/op and allocs/op")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: benchplot [-out dir] [-allocs] file.txt...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*out, *allocs, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "benchplot:", err)
		os.Exit(1)
	}
}

// parseAll parses the benchmark results of files.
func parseAll(files []string) ([]benchplot.Point, error) {
	var pts []benchplot.Point
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		p, err := benchplot.Parse(f, name)
		f.Close()
		if err != nil {
			return nil, err
		}
		pts = append(pts, p...)
	}
	return pts, nil
}

func run(out string, allocs bool, files []string) error {
	pts, err := parseAll(files)
	if err != nil {
		return err
	}
	if !allocs {
		kept := pts[:0]
		for _, p := range pts {
			if p.Unit != "B/op" && p.Unit != "allocs/op" {
				kept = append(kept, p)
			}
		}
		pts = kept
	}
	charts := benchplot.Group(pts)
	if len(charts) == 0 {
		return fmt.Errorf("no BenchmarkSweep results in %v", files)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	byRecipe := map[string][]benchplot.Chart{}
	var recipes []string
	for _, c := range charts {
		svg, err := benchplot.SVG(c)
		if err != nil {
			return err
		}
		name := filepath.Join(out, c.FileName()+".svg")
		if err := os.WriteFile(name, svg, 0o644); err != nil {
			return err
		}
		fmt.Println(name)
		if byRecipe[c.Recipe] == nil {
			recipes = append(recipes, c.Recipe)
		}
		byRecipe[c.Recipe] = append(byRecipe[c.Recipe], c)
	}
	for _, r := range recipes {
		name := filepath.Join(out, r+".md")
		f, err := os.Create(name)
		if err != nil {
			return err
		}
		err = benchplot.Table(f, byRecipe[r])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		fmt.Println(name)
	}
	return nil
}
