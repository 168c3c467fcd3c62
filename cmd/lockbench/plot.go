package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/txnlock/txnlock/bench"
)

// plotFormats are the extensions --plot takes.
var plotFormats = []string{".png", ".svg", ".pdf"}

// checkPlotPath reports, before any run, why file could not take the
// plot: an extension that is not a format, a directory, or a place where
// no file can be created. It leaves nothing behind.
func checkPlotPath(file string) error {
	ext := strings.ToLower(filepath.Ext(file))
	if !slices.Contains(plotFormats, ext) {
		return fmt.Errorf("plot %q: the extension must be one of %s", file, strings.Join(plotFormats, ", "))
	}
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		return fmt.Errorf("plot %q: is a directory", file)
	}
	probe, err := os.CreateTemp(filepath.Dir(file), ".lockbench-plot-*")
	if err != nil {
		return fmt.Errorf("plot %q: cannot create a file there: %w", file, errors.Unwrap(err))
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// writePlot draws res in two panels, QPS against threads on top and each
// lock kind's ratio to the baseline below, and saves them to file in the
// format of its extension (checkPlotPath).
func writePlot(file string, res *bench.Result) error {
	const w, h = 8 * vg.Inch, 8 * vg.Inch
	panels := [][]*plot.Plot{{qpsPlot(res)}}
	if len(res.Options.Locks) > 1 {
		panels = append(panels, []*plot.Plot{ratioPlot(res)})
	}
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(file), "."))
	var c vg.CanvasWriterTo
	switch ext {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	case "svg":
		c = vgsvg.New(w, h)
	case "pdf":
		c = vgpdf.New(w, h)
	default:
		return fmt.Errorf("plot %q: unknown format %q", file, ext)
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8), PadY: vg.Points(12)}
	canvases := plot.Align(panels, tiles, dc)
	for i, row := range panels {
		row[0].Draw(canvases[i][0])
	}
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot %s: %w", file, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("plot %s: %w", file, err)
	}
	return nil
}

// qpsPlot draws a line per lock kind through the cells' median QPS, with
// a bar over the interval that holds each median with at least 90%
// confidence (Cell.QPSLo to QPSHi: one slow run does not reach down to 0).
func qpsPlot(res *bench.Result) *plot.Plot {
	o := res.Options
	p := newThreadPlot(o.Threads)
	p.Y.Min = 0
	p.Title.Text = fmt.Sprintf("%s, layout %s, storage %s, %d x %d rows", o.Workload, o.Layout, o.Storage, o.Tables, o.TableSize)
	if o.NoSK {
		p.Title.Text += ", no secondary index"
	}
	p.Y.Label.Text = fmt.Sprintf("QPS (median of %d runs; bars: its 90%% interval)", 2*o.Pairs)
	p.Y.Tick.Marker = thousandsTicks{}
	maxY := 0.0
	for i, l := range o.Locks {
		var b errBars
		for _, t := range o.Threads {
			if c, ok := cellOf(res, l, t); ok {
				b.add(float64(t), c.QPSMedian, c.QPSLo, c.QPSHi)
				maxY = max(maxY, c.QPSHi)
			}
		}
		addSeries(p, i, string(l), b)
	}
	p.Y.Max = maxY * 1.15 // room for the legend
	if p.Y.Max == 0 {
		p.Y.Max = 1
	}
	return p
}

// ratioPlot draws each other kind's ratio to the baseline in %, the
// median of the pairs with its interval as a bar, and a line at 100. Its
// y axis is fitted to the medians that are not outliers (ratioLimits);
// whatever lies beyond it, a median or the end of a bar, is drawn at the
// edge with a triangle and labelled with its value.
func ratioPlot(res *bench.Result) *plot.Plot {
	o := res.Options
	base := o.Locks[0]
	p := newThreadPlot(o.Threads)
	p.Title.Text = fmt.Sprintf("ratio to %s (median of the pairs; bars: its interval; triangles: beyond the axis, labelled)", base)
	p.Y.Label.Text = fmt.Sprintf("%% of %s's QPS", base)
	p.Y.Tick.Marker = plainTicks{}
	var all []ratioPoint
	for _, l := range o.Locks[1:] {
		for _, t := range o.Threads {
			if c, ok := cellOf(res, l, t); ok && c.Ratio != nil {
				r := c.Ratio
				all = append(all, ratioPoint{x: float64(t), med: 100 * r.Median, lo: 100 * r.Lo, hi: 100 * r.Hi})
			}
		}
	}
	lo, hi := ratioLimits(all)
	p.Y.Min, p.Y.Max = lo, hi
	var clipped plotter.XYLabels
	clip := func(x, y float64) float64 {
		switch {
		case y > hi:
			clipped.XYs = append(clipped.XYs, plotter.XY{X: x, Y: hi})
			clipped.Labels = append(clipped.Labels, strconv.FormatFloat(y, 'f', 0, 64))
			return hi
		case y < lo:
			clipped.XYs = append(clipped.XYs, plotter.XY{X: x, Y: lo})
			clipped.Labels = append(clipped.Labels, strconv.FormatFloat(y, 'f', 0, 64))
			return lo
		}
		return y
	}
	for i, l := range o.Locks[1:] {
		var b errBars
		for _, t := range o.Threads {
			if c, ok := cellOf(res, l, t); ok && c.Ratio != nil {
				r, x := c.Ratio, float64(t)
				b.add(x, clip(x, 100*r.Median), clip(x, 100*r.Lo), clip(x, 100*r.Hi))
			}
		}
		addSeries(p, i+1, fmt.Sprintf("%s/%s", l, base), b)
	}
	if even, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: 100}, {X: p.X.Max, Y: 100}}); err == nil {
		even.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		p.Add(even)
	}
	addClipped(p, clipped, hi)
	return p
}

// ratioPoint is one ratio in %: its median and interval at x threads.
type ratioPoint struct{ x, med, lo, hi float64 }

// ratioLimits fits the ratio axis. The medians far from the others (by
// more than 3 median absolute deviations, and more than 25 points) are
// outliers and left out; the rest and 100 set the core, and the axis
// reaches past the core by the core's width (at least 10 points), less
// where no bar goes that far. So one pair at 2,592% flattens nothing.
func ratioLimits(pts []ratioPoint) (lo, hi float64) {
	meds := make([]float64, 0, len(pts))
	for _, p := range pts {
		meds = append(meds, p.med)
	}
	center := medianOf(meds)
	devs := make([]float64, len(meds))
	for i, m := range meds {
		devs[i] = math.Abs(m - center)
	}
	cut := max(3*medianOf(devs), 25)
	coreLo, coreHi := 100.0, 100.0
	for _, m := range meds {
		if math.Abs(m-center) <= cut {
			coreLo, coreHi = min(coreLo, m), max(coreHi, m)
		}
	}
	reach := max(coreHi-coreLo, 10)
	lo, hi = coreLo, coreHi
	for _, p := range pts {
		lo = max(min(lo, p.lo, p.med), coreLo-reach)
		hi = min(max(hi, p.hi, p.med), coreHi+reach)
	}
	pad := (hi - lo) * 0.08
	return lo - pad, hi + pad*2 // room for the legend above
}

// medianOf is the median of xs (0 for none), leaving xs as it was.
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// addClipped marks the values drawn at an edge of the axis: a triangle
// pointing past the edge (up at the top, hi, down at the bottom) and the
// value beside it.
func addClipped(p *plot.Plot, clipped plotter.XYLabels, hi float64) {
	if len(clipped.XYs) == 0 {
		return
	}
	for _, up := range []bool{true, false} {
		var pts plotter.XYs
		for _, xy := range clipped.XYs {
			if (xy.Y == hi) == up {
				pts = append(pts, xy)
			}
		}
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			continue
		}
		sc.GlyphStyle.Radius = vg.Points(4)
		sc.GlyphStyle.Shape = draw.TriangleGlyph{}
		if !up {
			sc.GlyphStyle.Shape = invertedTriangle{}
		}
		p.Add(sc)
	}
	if labels, err := plotter.NewLabels(clipped); err == nil {
		for i := range labels.TextStyle {
			labels.TextStyle[i].XAlign = draw.XLeft
			labels.TextStyle[i].YAlign = draw.YCenter
		}
		labels.Offset = vg.Point{X: vg.Points(6)}
		p.Add(labels)
	}
}

// invertedTriangle is a triangle glyph pointing down.
type invertedTriangle struct{}

func (invertedTriangle) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius
	dx, dy := r*vg.Length(math.Cos(math.Pi/6)), r*vg.Length(math.Sin(math.Pi/6))
	var path vg.Path
	path.Move(vg.Point{X: pt.X, Y: pt.Y - r})
	path.Line(vg.Point{X: pt.X - dx, Y: pt.Y + dy})
	path.Line(vg.Point{X: pt.X + dx, Y: pt.Y + dy})
	path.Close()
	c.SetColor(sty.Color)
	c.Fill(path)
}

// newThreadPlot is a plot whose x axis is the thread axis (threadAxis),
// with a grid and the legend top left.
func newThreadPlot(threads []int) *plot.Plot {
	p := plot.New()
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	threadAxis(&p.X, threads)
	return p
}

// addSeries draws b as the i-th series (its color and marker), with its
// bars, and adds it to the legend; an empty b draws nothing.
func addSeries(p *plot.Plot, i int, name string, b errBars) {
	if b.Len() == 0 {
		return
	}
	line, points, err := plotter.NewLinePoints(b.xys)
	if err != nil {
		return
	}
	if bars, err := plotter.NewYErrorBars(b); err == nil {
		bars.Color = plotutil.Color(i)
		bars.Width = vg.Points(1)
		p.Add(bars)
	}
	line.Color = plotutil.Color(i)
	line.Width = vg.Points(2)
	points.Color = plotutil.Color(i)
	points.Shape = plotutil.Shape(i)
	points.Radius = vg.Points(3)
	p.Add(line, points)
	p.Legend.Add(name, line, points)
}

// cellOf finds res's cell of (l, t).
func cellOf(res *bench.Result, l bench.LockKind, t int) (bench.Cell, bool) {
	for _, c := range res.Cells {
		if c.Lock == l && c.Threads == t {
			return c, true
		}
	}
	return bench.Cell{}, false
}

// threadAxis makes x the thread axis: logarithmic, as the ramp doubles
// (1, 2, 4, ..., 100 would crowd the left of a linear axis), ticked at
// the measured thread counts, and widened by a quarter of a doubling on
// each side so that the end markers and bars are not cut by the frame.
// Thread counts are at least 1 (Options.Validate).
func threadAxis(x *plot.Axis, threads []int) {
	const pad = 1.189207115002721 // 2^(1/4)
	x.Label.Text = "threads"
	if len(threads) == 0 {
		return
	}
	x.Scale = plot.LogScale{}
	var ticks plot.ConstantTicks
	lo, hi := threads[0], threads[0]
	for _, t := range threads {
		ticks = append(ticks, plot.Tick{Value: float64(t), Label: strconv.Itoa(t)})
		lo, hi = min(lo, t), max(hi, t)
	}
	x.Tick.Marker = ticks
	x.Min, x.Max = float64(lo)/pad, float64(hi)*pad
}

// errBars are points with a bar from lo to hi each (plotter.YErrorer).
type errBars struct {
	xys    plotter.XYs
	lo, hi []float64 // distances below and above each point
}

func (b *errBars) add(x, y, lo, hi float64) {
	b.xys = append(b.xys, plotter.XY{X: x, Y: y})
	b.lo = append(b.lo, y-lo)
	b.hi = append(b.hi, hi-y)
}

func (b errBars) Len() int                        { return len(b.xys) }
func (b errBars) XY(i int) (float64, float64)     { return b.xys[i].X, b.xys[i].Y }
func (b errBars) YError(i int) (float64, float64) { return b.lo[i], b.hi[i] }

// thousandsTicks labels the QPS axis 0, 50k, 100k, ...
type thousandsTicks struct{}

func (thousandsTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	labeled := 0
	for _, t := range ts {
		if t.Label != "" {
			labeled++
		}
	}
	for i := range ts {
		if ts[i].Label == "" && labeled >= 4 {
			continue // enough major ticks: leave the minor ones bare
		}
		v := ts[i].Value
		ts[i].Label = strconv.FormatFloat(v, 'f', -1, 64)
		switch {
		case v >= 1e6:
			ts[i].Label = trimZeros(strconv.FormatFloat(v/1e6, 'f', 2, 64)) + "M"
		case v >= 1e3:
			ts[i].Label = trimZeros(strconv.FormatFloat(v/1e3, 'f', 1, 64)) + "k"
		}
	}
	return ts
}

// plainTicks labels an axis with as many decimals as its step needs: 90,
// 95, 100 rather than 90.00, 95.00, 100.00.
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	step := math.Inf(1)
	prev := math.NaN()
	for _, t := range ts {
		if t.Label == "" {
			continue
		}
		if !math.IsNaN(prev) {
			step = min(step, t.Value-prev)
		}
		prev = t.Value
	}
	decimals := 0
	if step < 1 && step > 0 {
		decimals = int(math.Ceil(-math.Log10(step)))
	}
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', decimals, 64)
		}
	}
	return ts
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
