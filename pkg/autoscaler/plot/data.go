package plot

import (
	"gonum.org/v1/plot/plotter"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/scenario"
)

// span is a period [from, to) in scenario seconds.
type span struct{ from, to float64 }

// chartData is what the chart shows, taken from the samples and the lines.
// A series is a list of segments: a gap (no metric, no data) splits it.
type chartData struct {
	start, end float64

	metric      string // the label of the top panel's y axis
	averageName string // "stable average", or the HPA class's "usage"
	samples     []plotter.XYs
	stable      []plotter.XYs
	panicAvg    []plotter.XYs
	target      float64 // per pod; 0 when unknown

	desired, ready plotter.XYs
	recommended    []plotter.XYs

	panics, activator []span
}

// newChartData extracts the series. Step series (replicas) get a last point
// at end, so that the last value holds until the end of the replay.
func newChartData(samples []scenario.Sample, lines []scenario.Line, rev *config.Revision) *chartData {
	d := &chartData{metric: metricLabel(rev.Metric), averageName: "stable average", target: rev.Target}
	if rev.Class == config.ClassHPA {
		d.averageName = "usage per pod"
		if rev.Metric == config.MetricCPU || rev.Metric == config.MetricMemory {
			d.averageName = "utilization"
		}
		d.target = hpaTarget(rev)
	}
	if len(samples) > 0 {
		d.start, d.end = float64(samples[0].T), float64(samples[len(samples)-1].T)
	}
	if n := len(lines); n > 0 {
		d.start = min(d.start, float64(lines[0].T))
		d.end = max(d.end, float64(lines[n-1].T))
	}
	d.addSamples(samples, rev.Metric)
	d.addLines(lines, rev.Class == config.ClassHPA)
	return d
}

func metricLabel(metric string) string {
	switch metric {
	case config.MetricConcurrency:
		return "requests in flight"
	case config.MetricRPS:
		return "requests per second"
	case config.MetricCPU, config.MetricMemory:
		return metric + " utilization (% of request)"
	}
	return metric
}

// hpaTarget is the target of the HPA class's scaling metric.
func hpaTarget(rev *config.Revision) float64 {
	for _, m := range rev.Metrics {
		if m.Metric == rev.Metric {
			return m.Target
		}
	}
	if len(rev.Metrics) > 0 {
		return rev.Metrics[0].Target
	}
	return rev.Target
}

// segments collects a series with gaps.
type segments struct{ out []plotter.XYs }

func (s *segments) add(x, y float64, ok bool) {
	switch {
	case !ok:
		if n := len(s.out); n > 0 && len(s.out[n-1]) > 0 {
			s.out = append(s.out, nil)
		}
	case len(s.out) == 0:
		s.out = []plotter.XYs{{{X: x, Y: y}}}
	default:
		s.out[len(s.out)-1] = append(s.out[len(s.out)-1], plotter.XY{X: x, Y: y})
	}
}

func (s *segments) result() []plotter.XYs {
	var out []plotter.XYs
	for _, seg := range s.out {
		if len(seg) > 0 {
			out = append(out, seg)
		}
	}
	return out
}

func (d *chartData) addSamples(samples []scenario.Sample, metric string) {
	var load segments
	var ready int32
	for _, s := range samples {
		if s.Ready != nil {
			ready = *s.Ready
		}
		t := float64(s.T)
		d.ready = append(d.ready, plotter.XY{X: t, Y: float64(ready)})
		switch metric {
		case config.MetricRPS:
			load.add(t, s.RPS, s.HasMetric)
		case config.MetricConcurrency:
			load.add(t, s.Concurrency, s.HasMetric)
		}
	}
	d.samples = load.result()
	if n := len(d.ready); n > 0 && d.ready[n-1].X < d.end {
		d.ready = append(d.ready, plotter.XY{X: d.end, Y: d.ready[n-1].Y})
	}
}

// addLines takes the decisions; the HPA class has no panic average.
func (d *chartData) addLines(lines []scenario.Line, hpa bool) {
	var stable, panicAvg, rec segments
	for i, l := range lines {
		dec := &l.Decision
		t := float64(l.T)
		next := d.end
		if i+1 < len(lines) {
			next = float64(lines[i+1].T)
		}
		stable.add(t, dec.Stable, dec.HasData)
		panicAvg.add(t, dec.PanicAverage, dec.HasData && !hpa)
		d.desired = append(d.desired, plotter.XY{X: t, Y: float64(dec.Desired)})
		rec.add(t, float64(dec.Recommended), dec.Recommended >= 0)
		if dec.Recommended >= 0 {
			rec.add(next, float64(dec.Recommended), true) // a step holds until the next line
		}
		if dec.Panic {
			d.panics = extend(d.panics, t, next)
		}
		if dec.ActivatorInPath {
			d.activator = extend(d.activator, t, next)
		}
	}
	if n := len(d.desired); n > 0 && d.desired[n-1].X < d.end {
		d.desired = append(d.desired, plotter.XY{X: d.end, Y: d.desired[n-1].Y})
	}
	d.stable, d.panicAvg, d.recommended = stable.result(), panicAvg.result(), rec.result()
}

// extend adds [from, to) to the periods, joining it to the last one when
// they touch.
func extend(spans []span, from, to float64) []span {
	if n := len(spans); n > 0 && spans[n-1].to >= from {
		spans[n-1].to = max(spans[n-1].to, to)
		return spans
	}
	return append(spans, span{from, to})
}

// maxLoad is the largest value of the top panel.
func (d *chartData) maxLoad() float64 {
	m := d.target
	for _, ss := range [][]plotter.XYs{d.samples, d.stable, d.panicAvg} {
		for _, seg := range ss {
			for _, p := range seg {
				m = max(m, p.Y)
			}
		}
	}
	return m
}

// maxReplicas is the largest value of the bottom panel.
func (d *chartData) maxReplicas() float64 {
	m := 1.0
	for _, p := range append(append(plotter.XYs{}, d.desired...), d.ready...) {
		m = max(m, p.Y)
	}
	for _, seg := range d.recommended {
		for _, p := range seg {
			m = max(m, p.Y)
		}
	}
	return m
}
