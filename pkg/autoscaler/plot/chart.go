package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The chart's size and palette (the same as the live dashboard's).
const (
	width  = 10 * vg.Inch
	height = 6.2 * vg.Inch
)

var (
	sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

	colSamples     = rgb(0x9c, 0xa3, 0xaf)
	colStable      = rgb(0x25, 0x63, 0xeb)
	colPanicAvg    = rgb(0xea, 0x58, 0x0c)
	colTarget      = rgb(0x64, 0x74, 0x8b)
	colDesired     = rgb(0x15, 0x80, 0x3d)
	colReady       = rgb(0x1b, 0x24, 0x30)
	colRecommended = rgb(0xb4, 0x53, 0x09)
	colPanicBand   = color.NRGBA{R: 0xef, G: 0x44, B: 0x44, A: 0x2e}
	colActBand     = color.NRGBA{R: 0x7c, G: 0x3a, B: 0xed, A: 0x14}
	colActStrip    = rgb(0x7c, 0x3a, 0xed)
	colGrid        = rgb(0xe5, 0xe9, 0xef)
	colInk         = rgb(0x1b, 0x24, 0x30)
	colMuted       = rgb(0x5b, 0x66, 0x75)
)

func rgb(r, g, b uint8) color.Color { return color.NRGBA{R: r, G: g, B: b, A: 0xff} }

// legendEntry is one item of the legend row above the panels.
type legendEntry struct {
	name  string
	thumb plot.Thumbnailer
}

// svg draws the chart and returns the SVG document.
func svg(d *chartData, title string) ([]byte, error) {
	top, legend, err := loadPanel(d)
	if err != nil {
		return nil, err
	}
	bottom, more, err := replicasPanel(d)
	if err != nil {
		return nil, err
	}
	legend = append(legend, more...)

	c := vgsvg.New(width, height)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	drawText(dc, vg.Point{X: dc.Min.X + 14, Y: dc.Max.Y - 22}, title, 13, colInk)
	bottomOfLegend := drawLegend(dc, vg.Point{X: dc.Min.X + 14, Y: dc.Max.Y - 42}, dc.Max.X-14, legend)

	area := dc
	area.Max.Y = bottomOfLegend - 8
	area.Min.Y += 6
	area.Max.X -= 14
	canvases := stack(area, []*plot.Plot{top, bottom}, []float64{0.58, 0.42}, 10)
	top.Draw(canvases[0])
	bottom.Draw(canvases[1])

	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("writing the SVG: %w", err)
	}
	// gonum measures text with Liberation Sans; name its metric-compatible
	// fallbacks so that viewers without it keep the layout.
	out := bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Sans;"),
		[]byte("font-family:'Liberation Sans',Arimo,Arial,Helvetica,sans-serif;"))
	return out, nil
}

// newPanel returns a plot with the chart's fonts, grid and x range.
func newPanel(d *chartData, ylabel string) *plot.Plot {
	p := plot.New()
	for _, ts := range []*plot.Axis{&p.X, &p.Y} {
		ts.Label.TextStyle.Font = font.From(sans, 10)
		ts.Label.TextStyle.Color = colMuted
		ts.Tick.Label.Font = font.From(sans, 9)
		ts.Tick.Label.Color = colMuted
		ts.Color = colGrid
		ts.Tick.Color = colGrid
	}
	p.Y.Label.Text = ylabel
	p.X.Min, p.X.Max = d.start, math.Max(d.end, d.start+1)
	p.Y.Min = 0
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = colGrid, colGrid
	p.Add(grid)
	return p
}

// loadPanel: the samples, the averages and the target, over the periods.
func loadPanel(d *chartData) (*plot.Plot, []legendEntry, error) {
	p := newPanel(d, d.metric)
	p.X.Tick.Marker = blankTicks{}
	p.Y.Max = niceCeil(1.1 * math.Max(d.maxLoad(), 1))
	p.Y.Tick.Marker = niceTicks{}
	var legend []legendEntry
	p.Add(periods(d, false)...)
	add := func(name string, segs []plotter.XYs, style draw.LineStyle) error {
		for i, seg := range segs {
			l, err := plotter.NewLine(seg)
			if err != nil {
				return fmt.Errorf("plotting %s: %w", name, err)
			}
			l.LineStyle = style
			p.Add(l)
			if i == 0 {
				legend = append(legend, legendEntry{name, l})
			}
		}
		return nil
	}
	if err := add("samples (per second)", d.samples, line(colSamples, 0.8)); err != nil {
		return nil, nil, err
	}
	if d.target > 0 {
		tl := line(colTarget, 1.2)
		tl.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		if err := add("target per pod", []plotter.XYs{{{X: d.start, Y: d.target}, {X: p.X.Max, Y: d.target}}}, tl); err != nil {
			return nil, nil, err
		}
	}
	if err := add("panic average", d.panicAvg, line(colPanicAvg, 1.2)); err != nil {
		return nil, nil, err
	}
	if err := add(d.averageName, d.stable, line(colStable, 1.8)); err != nil {
		return nil, nil, err
	}
	return p, legend, nil
}

// replicasPanel: desired, recommended and ready replicas, over the periods.
func replicasPanel(d *chartData) (*plot.Plot, []legendEntry, error) {
	p := newPanel(d, "replicas")
	p.X.Label.Text = "seconds"
	p.X.Tick.Marker = secondTicks{}
	p.Y.Max = math.Ceil(1.15 * d.maxReplicas())
	p.Y.Tick.Marker = intTicks{}
	p.Add(periods(d, true)...)
	var legend []legendEntry
	for i, seg := range d.recommended {
		l, err := plotter.NewLine(seg)
		if err != nil {
			return nil, nil, fmt.Errorf("plotting recommended replicas: %w", err)
		}
		l.LineStyle = line(colRecommended, 1.4)
		l.LineStyle.Dashes = []vg.Length{vg.Points(1.5), vg.Points(2.5)}
		p.Add(l)
		if i == 0 {
			legend = append(legend, legendEntry{"recommended", l})
		}
	}
	for _, s := range []struct {
		name  string
		xys   plotter.XYs
		style draw.LineStyle
	}{
		{"ready", d.ready, dashed(line(colReady, 1.1), 4, 2.5)},
		{"desired replicas", d.desired, line(colDesired, 2.2)},
	} {
		if len(s.xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(s.xys)
		if err != nil {
			return nil, nil, fmt.Errorf("plotting %s: %w", s.name, err)
		}
		l.StepStyle = plotter.PostStep
		l.LineStyle = s.style
		p.Add(l)
		legend = append(legend, legendEntry{s.name, l})
	}
	if len(d.panics) > 0 {
		legend = append(legend, legendEntry{"panic mode", bands{color: colPanicBand}})
	}
	if len(d.activator) > 0 {
		legend = append(legend, legendEntry{"activator in path", bands{color: colActStrip, strip: true}})
	}
	return p, legend, nil
}

func line(c color.Color, w float64) draw.LineStyle {
	return draw.LineStyle{Color: c, Width: vg.Points(w)}
}

func dashed(s draw.LineStyle, on, off float64) draw.LineStyle {
	s.Dashes = []vg.Length{vg.Points(on), vg.Points(off)}
	return s
}

// periods are the shaded panic and activator periods of a panel, with the
// activator's strip along the bottom when strip is set.
func periods(d *chartData, strip bool) []plot.Plotter {
	ps := []plot.Plotter{bands{spans: d.activator, color: colActBand}, bands{spans: d.panics, color: colPanicBand}}
	if strip {
		ps = append(ps, bands{spans: d.activator, color: colActStrip, strip: true})
	}
	return ps
}

// bands shades periods over the whole height of a panel, or as a strip
// along its bottom edge.
type bands struct {
	spans []span
	color color.Color
	strip bool
}

func (b bands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	c.SetColor(b.color)
	for _, s := range b.spans {
		r := vg.Rectangle{Min: vg.Point{X: trX(s.from), Y: c.Min.Y}, Max: vg.Point{X: trX(s.to), Y: c.Max.Y}}
		if b.strip {
			r.Max.Y = c.Min.Y + vg.Points(4)
		}
		c.Fill(r.Path())
	}
}

func (b bands) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	if b.strip {
		mid := (r.Min.Y + r.Max.Y) / 2
		r.Min.Y, r.Max.Y = mid-vg.Points(2), mid+vg.Points(2)
	}
	c.SetColor(b.color)
	c.Fill(r.Path())
}

// stack places plots one above the other in area, with the given shares
// of its height, so that their data areas line up on both sides (as
// plot.Align does for equal tiles).
func stack(area draw.Canvas, plots []*plot.Plot, shares []float64, gap vg.Length) []draw.Canvas {
	out := make([]draw.Canvas, len(plots))
	total := area.Max.Y - area.Min.Y - gap*vg.Length(len(plots)-1)
	y := area.Max.Y
	var left, right vg.Length
	for i, p := range plots {
		h := total * vg.Length(shares[i])
		out[i] = area
		out[i].Max.Y, out[i].Min.Y = y, y-h
		y -= h + gap
		dc := p.DataCanvas(out[i])
		left = max(left, dc.Min.X-out[i].Min.X)
		right = max(right, out[i].Max.X-dc.Max.X)
	}
	for i, p := range plots {
		dc := p.DataCanvas(out[i])
		out[i].Min.X += left - (dc.Min.X - out[i].Min.X)
		out[i].Max.X -= right - (out[i].Max.X - dc.Max.X)
	}
	return out
}

func drawText(c draw.Canvas, at vg.Point, s string, size vg.Length, col color.Color) {
	sty := draw.TextStyle{Color: col, Font: font.From(sans, size), Handler: plot.DefaultTextHandler}
	c.FillText(sty, at, s)
}

// drawLegend draws the entries in rows from at, wrapping before right,
// and returns the bottom of the last row.
func drawLegend(c draw.Canvas, at vg.Point, right vg.Length, entries []legendEntry) vg.Length {
	sty := draw.TextStyle{Color: colInk, Font: font.From(sans, 9.5), Handler: plot.DefaultTextHandler}
	const rowHeight = 15
	x, y := at.X, at.Y
	for _, e := range entries {
		w := 22 + sty.Width(e.name)
		if x > at.X && x+w > right {
			x, y = at.X, y-rowHeight
		}
		thumb := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: y - 1}, Max: vg.Point{X: x + 18, Y: y + 8}}}
		e.thumb.Thumbnail(&thumb)
		c.FillText(sty, vg.Point{X: x + 22, Y: y}, e.name)
		x += w + 14
	}
	return y - 4
}

// blankTicks keeps the default tick positions without labels (the top
// panel shares the bottom one's x labels).
type blankTicks struct{}

func (blankTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := secondTicks{}.Ticks(lo, hi)
	for i := range ts {
		ts[i].Label = ""
	}
	return ts
}

// niceTicks puts about five ticks at 1, 2 or 5 times a power of ten,
// labelled without needless decimals.
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick { return ticks(lo, hi, 5) }

// ticks puts about n ticks at 1, 2 or 5 times a power of ten.
func ticks(lo, hi float64, n int) []plot.Tick {
	step := niceCeil((hi - lo) / float64(n))
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	var ts []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi+step*1e-9; i++ {
		// Rounded to the step's decimals: 0.6, not 0.6000000000000001.
		v, _ := strconv.ParseFloat(strconv.FormatFloat(i*step, 'f', decimals, 64), 64)
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	return ts
}

// secondTicks marks the x axis, about every eighth of it.
type secondTicks struct{}

func (secondTicks) Ticks(lo, hi float64) []plot.Tick { return ticks(lo, hi, 8) }

// intTicks labels whole numbers only (replicas).
type intTicks struct{}

func (intTicks) Ticks(lo, hi float64) []plot.Tick {
	step := math.Max(1, niceCeil((hi-lo)/5))
	var ts []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		ts = append(ts, plot.Tick{Value: v, Label: fmt.Sprint(v)})
	}
	return ts
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, f := range []float64{1, 2, 5, 10} {
		if f*p >= v-1e-9 {
			return f * p
		}
	}
	return 10 * p
}
