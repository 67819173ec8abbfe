package plot

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/scenario"
)

// Formats Render writes.
const (
	FormatSVG  = "svg"
	FormatHTML = "html"
)

// errFormat is returned for a format other than FormatSVG and FormatHTML.
var errFormat = errors.New("unknown plot format")

// Render draws the replay of samples for rev, whose decisions are lines,
// and writes it to w as an SVG document (FormatSVG) or as an HTML page
// embedding the SVG with the revision's settings and the decisions that
// changed something (FormatHTML).
func Render(w io.Writer, format string, samples []scenario.Sample, lines []scenario.Line, rev *config.Revision) error {
	if format != FormatSVG && format != FormatHTML {
		return fmt.Errorf("plot format %q: %w; use %q or %q", format, errFormat, FormatSVG, FormatHTML)
	}
	if rev == nil {
		return errors.New("plotting: no revision settings")
	}
	if len(samples) == 0 && len(lines) == 0 {
		return errors.New("plotting: no samples and no decisions to draw")
	}
	d := newChartData(samples, lines, rev)
	doc, err := svg(d, title(rev))
	if err != nil {
		return err
	}
	if format == FormatSVG {
		_, err = w.Write(doc)
	} else {
		err = writeHTML(w, doc, lines, rev)
	}
	if err != nil {
		return fmt.Errorf("writing the %s plot: %w", format, err)
	}
	return nil
}

// title names the class, the metric, the target and the windows of rev.
func title(rev *config.Revision) string {
	class, _, _ := strings.Cut(rev.Class, ".")
	if rev.Class == config.ClassHPA {
		unit := " per pod"
		if rev.Metric == config.MetricCPU || rev.Metric == config.MetricMemory {
			unit = "% of the request"
		}
		return fmt.Sprintf("%s on %s, target %s%s", strings.ToUpper(class), rev.Metric, number(hpaTarget(rev)), unit)
	}
	return fmt.Sprintf("%s on %s, target %s per pod · stable window %s, panic window %s, panic threshold %s%%",
		strings.ToUpper(class), rev.Metric, number(rev.Target), seconds(rev.StableWindow), seconds(rev.PanicWindow),
		number(100*rev.PanicThreshold))
}

func seconds(d time.Duration) string { return number(d.Seconds()) + "s" }

func number(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%.4g", v), ".0") }
