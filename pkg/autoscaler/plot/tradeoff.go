package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// TradeoffPoint is one setting of `autoscaler tune --plot`: what it cost
// over a trace.
type TradeoffPoint struct {
	// Label names the setting on the chart.
	Label string
	// Series groups points drawn as one line, in the order given
	// (e.g. "knative", "learned"); "" draws the point alone.
	Series string
	// CostReplicaSeconds (idle replica-seconds plus the start cost of each
	// replica start) and ColdStartShare are the point's coordinates.
	CostReplicaSeconds, ColdStartShare float64
	// Front marks a point on the Pareto front (drawn filled).
	Front bool
}

// seriesColors are the series' colours in order: eight before one
// repeats (tune draws eight series and lone points), the two oranges far
// apart.
var seriesColors = []color.Color{colStable, colPanicAvg, colDesired, colActStrip, rgb(0x0e, 0x74, 0x90), rgb(0xdb, 0x27, 0x77),
	colRecommended, colSamples}

// Tradeoff draws the cold-start share against the cost in replica-hours of
// the points (a log scale when they span more than a factor of 5) and
// writes the SVG document to w.
func Tradeoff(w io.Writer, title string, points []TradeoffPoint) error {
	if len(points) == 0 {
		return errors.New("plotting: no setting to draw")
	}
	p := plot.New()
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = font.From(sans, 10)
		ax.Label.TextStyle.Color = colMuted
		ax.Tick.Label.Font = font.From(sans, 9)
		ax.Tick.Label.Color = colMuted
		ax.Color, ax.Tick.Color = colGrid, colGrid
	}
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 12)
	p.X.Label.Text = "cost in replica-hours: idle + replica starts x start cost"
	p.Y.Label.Text = "requests that start cold (%)"
	lo, hi := math.Inf(1), 0.0
	for _, pt := range points {
		lo, hi = math.Min(lo, pt.CostReplicaSeconds/3600), math.Max(hi, pt.CostReplicaSeconds/3600)
	}
	if lo > 0 && hi/lo > 5 {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, logTicks125{}
	}
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = colGrid, colGrid
	p.Add(grid)
	p.Legend.Top, p.Legend.TextStyle.Font = true, font.From(sans, 9)
	if err := addTradeoff(p, points); err != nil {
		return err
	}
	p.Y.Min = 0
	p.Legend.YOffs = -vg.Points(14)
	c := vgsvg.New(width, height)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	p.Draw(draw.Crop(dc, 12, -16, 10, -12))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return fmt.Errorf("writing the SVG: %w", err)
	}
	out := bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Sans;"),
		[]byte("font-family:'Liberation Sans',Arimo,Arial,Helvetica,sans-serif;"))
	_, err := w.Write(out)
	return err
}

// addTradeoff adds one line and its points per series, and the labels.
func addTradeoff(p *plot.Plot, points []TradeoffPoint) error {
	var order []string
	bySeries := map[string]plotter.XYs{}
	labels := plotter.XYLabels{}
	for _, pt := range points {
		xy := plotter.XY{X: pt.CostReplicaSeconds / 3600, Y: 100 * pt.ColdStartShare}
		if _, ok := bySeries[pt.Series]; !ok {
			order = append(order, pt.Series)
		}
		bySeries[pt.Series] = append(bySeries[pt.Series], xy)
		labels.XYs = append(labels.XYs, xy)
		labels.Labels = append(labels.Labels, pt.Label)
	}
	for i, name := range order {
		col := seriesColors[i%len(seriesColors)]
		if name != "" {
			l, err := plotter.NewLine(bySeries[name])
			if err != nil {
				return fmt.Errorf("plotting %s: %w", name, err)
			}
			l.LineStyle = line(col, 1.2)
			p.Add(l)
			p.Legend.Add(name, l)
		}
		s, err := plotter.NewScatter(bySeries[name])
		if err != nil {
			return fmt.Errorf("plotting %s: %w", name, err)
		}
		s.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
		p.Add(s)
	}
	var front plotter.XYs
	for _, pt := range points {
		if pt.Front {
			front = append(front, plotter.XY{X: pt.CostReplicaSeconds / 3600, Y: 100 * pt.ColdStartShare})
		}
	}
	if len(front) > 0 {
		s, err := plotter.NewScatter(front)
		if err != nil {
			return fmt.Errorf("plotting the front: %w", err)
		}
		s.GlyphStyle = draw.GlyphStyle{Color: colInk, Radius: vg.Points(6), Shape: draw.RingGlyph{}}
		p.Add(s)
		p.Legend.Add("Pareto front", s)
	}
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return fmt.Errorf("plotting the labels: %w", err)
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font = font.From(sans, 7.5)
		l.TextStyle[i].Color = colMuted
		l.TextStyle[i].XAlign = draw.XLeft
	}
	l.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(2)}
	p.Add(l)
	return nil
}

// logTicks125 labels a log axis at 1, 2 and 5 times the powers of ten.
type logTicks125 struct{}

func (logTicks125) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		for _, m := range []float64{1, 2, 5} {
			if v := m * math.Pow(10, e); v >= lo && v <= hi {
				ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
			}
		}
	}
	return ticks
}
