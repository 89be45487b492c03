package benchplot

import (
	"bytes"
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// units names what a metric measures, for the y axis; others are shown as
// their unit.
var units = map[string]string{
	"ns/op":        "time per operation (ns)",
	"p50-ms":       "median (ms)",
	"p90-ms":       "90th percentile (ms)",
	"p99-ms":       "99th percentile (ms)",
	"req/op":       "requests per operation",
	"notify/op":    "watch notifications per operation",
	"bytesread/op": "bytes read per operation",
	"items/sec":    "items per second",
	"ops/s":        "operations per second",
	"B/op":         "bytes allocated per operation",
	"allocs/op":    "allocations per operation",
}

// YLabel is the y axis label of a metric.
func YLabel(unit string) string {
	if l, ok := units[unit]; ok {
		return l + " [" + unit + "]"
	}
	return unit
}

// Width and Height are a chart's size.
const (
	Width  = 16 * vg.Centimeter
	Height = 10 * vg.Centimeter
)

// SVG draws the chart: the metric against N (log scale when N spans a
// factor of 10 or more), one line with point marks per series, a legend.
func SVG(c Chart) ([]byte, error) {
	p, err := newPlot(c)
	if err != nil {
		return nil, err
	}
	w, err := p.WriterTo(Width, Height, "svg")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// newPlot lays out the chart c.
func newPlot(c Chart) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %s", c.Recipe, c.Unit)
	p.X.Label.Text = "N (sweep size)"
	p.Y.Label.Text = YLabel(c.Unit)
	if c.LogX() {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	for i, s := range c.Series {
		xy := make(plotter.XYs, len(s.N))
		for j := range s.N {
			xy[j].X, xy[j].Y = s.N[j], s.V[j]
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, fmt.Errorf("benchplot: %s %s: %w", c.FileName(), s.Line, err)
		}
		l.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i)
		pts.Shape = plotutil.Shape(i)
		p.Add(l, pts)
		p.Legend.Add(s.Line, l, pts)
	}
	return p, nil
}
