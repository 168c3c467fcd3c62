package main

import (
	"errors"
	"fmt"
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

// qpsPlot draws a line per lock kind through the cells' mean QPS, with a
// bar from the cells' minimum to their maximum.
func qpsPlot(res *bench.Result) *plot.Plot {
	o := res.Options
	p := newThreadPlot(o.Threads)
	p.Title.Text = fmt.Sprintf("%s, layout %s, storage %s, %d x %d rows", o.Workload, o.Layout, o.Storage, o.Tables, o.TableSize)
	if o.NoSK {
		p.Title.Text += ", no secondary index"
	}
	p.Y.Label.Text = fmt.Sprintf("QPS (mean of %d runs; bars: min to max)", 2*o.Pairs)
	p.Y.Tick.Marker = thousandsTicks{}
	maxY := 0.0
	for i, l := range o.Locks {
		var b errBars
		for _, t := range o.Threads {
			if c, ok := cellOf(res, l, t); ok {
				b.add(float64(t), c.QPS, c.QPSMin, c.QPSMax)
				maxY = max(maxY, c.QPSMax)
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
// median of the pairs with its interval as a bar, and a line at 100.
func ratioPlot(res *bench.Result) *plot.Plot {
	o := res.Options
	base := o.Locks[0]
	p := newThreadPlot(o.Threads)
	p.Title.Text = fmt.Sprintf("ratio to %s (median of the pairs; bars: its interval)", base)
	p.Y.Label.Text = fmt.Sprintf("%% of %s's QPS", base)
	maxY := 100.0
	for i, l := range o.Locks[1:] {
		var b errBars
		for _, t := range o.Threads {
			if c, ok := cellOf(res, l, t); ok && c.Ratio != nil {
				r := c.Ratio
				b.add(float64(t), 100*r.Median, 100*r.Lo, 100*r.Hi)
				maxY = max(maxY, 100*r.Hi)
			}
		}
		addSeries(p, i+1, fmt.Sprintf("%s/%s", l, base), b)
	}
	if even, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: 100}, {X: p.X.Max, Y: 100}}); err == nil {
		even.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		p.Add(even)
	}
	p.Y.Max = maxY * 1.15
	return p
}

// newThreadPlot is a plot whose x axis is the thread axis (threadAxis)
// and whose y axis starts at 0, with a grid and the legend top left.
func newThreadPlot(threads []int) *plot.Plot {
	p := plot.New()
	p.Y.Min = 0
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

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
