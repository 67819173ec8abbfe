package plot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/scenario"
)

// replay parses a scenario and replays it for a KPA revision.
func replay(t *testing.T, js string) ([]scenario.Sample, []scenario.Line, *config.Revision) {
	t.Helper()
	scn, err := scenario.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	rev, err := scn.Revision(nil)
	if err != nil {
		t.Fatal(err)
	}
	var lines []scenario.Line
	if err := scenario.Replay(scn, rev, func(l scenario.Line) error { lines = append(lines, l); return nil }); err != nil {
		t.Fatal(err)
	}
	return scn.Samples, lines, rev
}

// burst: one pod at 3 in flight, then 200 for 20 seconds, then nothing.
func burst() string {
	var b strings.Builder
	b.WriteString(`{"config": {"stable-window": "6s"}, "annotations": {"autoscaling.knative.dev/target": "10"}, "samples": [`)
	for t := range 60 {
		c := "3"
		switch {
		case t >= 10 && t < 30:
			c = "200"
		case t >= 30:
			c = "0"
		}
		if t > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`{"t": ` + strconv.Itoa(t) + `, "concurrency": ` + c)
		if t == 0 {
			b.WriteString(`, "ready": 1`)
		}
		b.WriteString("}")
	}
	b.WriteString("]}")
	return b.String()
}

func TestRenderSVG(t *testing.T) {
	samples, lines, rev := replay(t, burst())
	var buf bytes.Buffer
	if err := Render(&buf, FormatSVG, samples, lines, rev); err != nil {
		t.Fatal(err)
	}
	wellFormed(t, buf.Bytes())
	out := buf.String()
	for _, want := range []string{"<svg", "KPA on concurrency, target 7 per pod", "requests in flight", "replicas", "seconds",
		"stable average", "panic average", "target per pod", "desired replicas", "recommended", "ready", "panic mode",
		"'Liberation Sans',Arimo,Arial,Helvetica,sans-serif"} {
		if !strings.Contains(out, want) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
}

func TestRenderHTML(t *testing.T) {
	samples, lines, rev := replay(t, burst())
	var buf bytes.Buffer
	if err := Render(&buf, FormatHTML, samples, lines, rev); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.HasPrefix(out, "<!doctype html>") || strings.Contains(out, "<?xml") {
		t.Errorf("not an HTML page embedding the SVG: %.80q", out)
	}
	for _, want := range []string{"<svg", "Effective settings", "stable window</dt><dd>6s", "<code>PanicEntered</code>", "panic mode: "} {
		if !strings.Contains(out, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(out, "http://") && !strings.Contains(out, "http://www.w3.org/") {
		t.Errorf("the page references another origin")
	}
}

func TestRenderErrors(t *testing.T) {
	samples, lines, rev := replay(t, burst())
	for _, tc := range []struct {
		name   string
		format string
		rev    *config.Revision
		s      []scenario.Sample
		l      []scenario.Line
		want   string
	}{
		{name: "format", format: "png", rev: rev, s: samples, l: lines, want: `plot format "png": unknown plot format; use "svg" or "html"`},
		{name: "no revision", format: FormatSVG, s: samples, l: lines, want: "plotting: no revision settings"},
		{name: "nothing to draw", format: FormatSVG, rev: rev, want: "plotting: no samples and no decisions to draw"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Render(io.Discard, tc.format, tc.s, tc.l, tc.rev)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if err := Render(io.Discard, "pdf", samples, lines, rev); !errors.Is(err, errFormat) {
		t.Errorf("unknown format: %v, want ErrFormat", err)
	}
}

// TestChartData: periods join while they last, series break at gaps, step
// series hold their last value until the end, and ready carries forward.
func TestChartData(t *testing.T) {
	samples, lines, rev := replay(t, `{"samples": [
		{"t": 0, "concurrency": 1, "ready": 1}, {"t": 1}, {"t": 2, "concurrency": 2}, {"t": 3, "concurrency": 2, "ready": 2},
		{"t": 4, "concurrency": 2}, {"t": 5}]}`)
	d := newChartData(samples, lines, rev)
	if d.start != 0 || d.end != 5 {
		t.Errorf("x range [%v, %v], want [0, 5]", d.start, d.end)
	}
	if got := len(d.samples); got != 2 {
		t.Errorf("%d sample segments, want 2 (seconds without a metric are gaps)", got)
	}
	var ready []float64
	for _, p := range d.ready {
		ready = append(ready, p.Y)
	}
	if diff := cmp.Diff([]float64{1, 1, 1, 2, 2, 2}, ready); diff != "" {
		t.Errorf("ready (-want +got):\n%s", diff)
	}
	if last := d.desired[len(d.desired)-1]; last.X != 5 {
		t.Errorf("desired ends at %v, want 5 (held until the end)", last.X)
	}
	if d.metric != "requests in flight" || d.target != rev.Target {
		t.Errorf("metric %q target %v", d.metric, d.target)
	}
}

func TestExtend(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   [][2]float64
		want []span
	}{
		{name: "touching periods join", in: [][2]float64{{0, 2}, {2, 4}, {4, 6}}, want: []span{{0, 6}}},
		{name: "a gap splits", in: [][2]float64{{0, 2}, {4, 6}}, want: []span{{0, 2}, {4, 6}}},
		{name: "none", want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []span
			for _, p := range tc.in {
				got = extend(got, p[0], p[1])
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(span{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lo, hi float64
		n      int
		want   []string
	}{
		{name: "hundreds", lo: 0, hi: 500, n: 5, want: []string{"0", "100", "200", "300", "400", "500"}},
		{name: "tenths without float noise", lo: 0, hi: 0.6, n: 5, want: []string{"0", "0.2", "0.4", "0.6"}},
		{name: "seconds", lo: 0, hi: 300, n: 8, want: []string{"0", "50", "100", "150", "200", "250", "300"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, tk := range ticks(tc.lo, tc.hi, tc.n) {
				got = append(got, tk.Label)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	var got []string
	for _, tk := range (intTicks{}).Ticks(0, 3) {
		got = append(got, tk.Label)
	}
	if diff := cmp.Diff([]string{"0", "1", "2", "3"}, got); diff != "" {
		t.Errorf("replica ticks (-want +got):\n%s", diff)
	}
}

// wellFormed fails unless doc is well-formed XML.
func wellFormed(t *testing.T, doc []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
	}
}
