package bench

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// WritePlot draws QPS against threads, one line per lock kind, and saves
// it to file; the extension picks the format (.png, .svg, .pdf).
func WritePlot(file string, res *Result) error {
	if filepath.Ext(file) == "" {
		return fmt.Errorf("bench: plot file %q has no extension (.png, .svg, .pdf)", file)
	}
	p, err := newPlot(res)
	if err != nil {
		return err
	}
	if err := p.Save(8*vg.Inch, 5*vg.Inch, file); err != nil {
		return fmt.Errorf("bench: plot: %w", err)
	}
	return nil
}

// newPlot draws res: a logarithmic thread axis (see threadAxis), a line
// per lock kind through the cells' mean QPS, and a bar from the cells'
// minimum to their maximum.
func newPlot(res *Result) (*plot.Plot, error) {
	o := res.Options
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s, layout %s, storage %s, %d x %d rows%s", o.Workload, o.Layout, o.Storage, o.Tables, o.TableSize, noSK(o.NoSK))
	p.Y.Label.Text = fmt.Sprintf("QPS (mean of %d runs; bars: min to max)", 2*o.Pairs)
	p.Y.Min = 0
	p.Y.Tick.Marker = thousandsTicks{}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	maxY := 0.0
	for i, l := range o.Locks {
		var pts plotter.XYs
		for _, t := range o.Threads {
			if c, ok := cell(res.Cells, l, t); ok {
				pts = append(pts, plotter.XY{X: float64(t), Y: c.QPS})
				maxY = max(maxY, c.QPSMax)
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		if bars, err := plotter.NewYErrorBars(newSpreadBars(res.Cells, l, o.Threads)); err == nil {
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
		p.Legend.Add(string(l), line, points)
	}
	p.Y.Max = maxY * 1.15 // room for the legend
	if p.Y.Max == 0 {
		p.Y.Max = 1
	}
	threadAxis(&p.X, o.Threads)
	return p, nil
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

// spreadBars are the min-to-max bars of lock kind l's cells.
type spreadBars struct{ pts, lo, hi []float64 }

func newSpreadBars(cells []Cell, l LockKind, threads []int) spreadBars {
	var b spreadBars
	for _, t := range threads {
		if c, ok := cell(cells, l, t); ok {
			b.pts = append(b.pts, float64(t), c.QPS)
			b.lo = append(b.lo, c.QPS-c.QPSMin)
			b.hi = append(b.hi, c.QPSMax-c.QPS)
		}
	}
	return b
}

func (b spreadBars) Len() int                        { return len(b.lo) }
func (b spreadBars) XY(i int) (float64, float64)     { return b.pts[2*i], b.pts[2*i+1] }
func (b spreadBars) YError(i int) (float64, float64) { return b.lo[i], b.hi[i] }

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
