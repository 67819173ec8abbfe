package plot

import (
	"html/template"
	"io"
	"strconv"
	"time"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/scenario"
)

// maxRows bounds the table of changes of the HTML page.
const maxRows = 500

// change is a row of the HTML page's table: a decision that differs from
// the previous one in a count, the mode, the routing or the state.
type change struct {
	T                    int64
	Desired, Recommended string
	Panic, Activator     bool
	State                string
	Reasons              []reasonRow
}

type reasonRow struct{ Code, Message string }

type setting struct{ Name, Value string }

type page struct {
	Title    string
	SVG      template.HTML
	Settings []setting
	Changes  []change
	Omitted  int
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Ebb replay: {{.Title}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Arial,
	sans-serif; color: #1b2430; background: #f4f6f9; margin: 0; padding: 20px; font-size: 14px; }
main { max-width: 1100px; margin: 0 auto; display: grid; gap: 16px; }
section { background: #fff; border: 1px solid #dfe4ea; border-radius: 8px; padding: 14px 16px; }
h1 { font-size: 20px; margin: 0; } h2 { font-size: 15px; margin: 0 0 10px; }
svg { display: block; width: 100%; height: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 5px 8px; border-top: 1px solid #eef1f5; vertical-align: top; font-variant-numeric: tabular-nums; }
th { color: #5b6675; font-weight: 600; font-size: 12px; white-space: nowrap; }
.settings { display: grid; grid-template-columns: repeat(auto-fill, minmax(240px, 1fr)); gap: 4px 18px; margin: 0; }
.settings div { display: flex; justify-content: space-between; gap: 12px; border-bottom: 1px solid #eef1f5; padding: 3px 0; }
.settings dt { color: #5b6675; } .settings dd { margin: 0; font-weight: 600; }
code { background: #eef2ff; color: #3730a3; border-radius: 4px; padding: 0 5px; font-size: 12px; font-weight: 600; }
.reasons { list-style: none; margin: 0; padding: 0; } .reasons span { margin-left: 6px; }
.panic { color: #b91c1c; font-weight: 600; } .act { color: #7c3aed; font-weight: 600; }
.muted { color: #5b6675; }
</style>
</head>
<body>
<main>
<section>
<h1>Ebb replay</h1>
<p class="muted">The x axis is the scenario's seconds. Shaded: panic mode (red), the activator in the path (violet, with a strip along the replicas).</p>
{{.SVG}}
</section>
<section aria-labelledby="settings">
<h2 id="settings">Effective settings</h2>
<dl class="settings">{{range .Settings}}<div><dt>{{.Name}}</dt><dd>{{.Value}}</dd></div>{{end}}</dl>
</section>
<section aria-labelledby="changes">
<h2 id="changes">Decisions that changed something</h2>
<table>
<thead><tr><th scope="col">t (s)</th><th scope="col">desired</th><th scope="col">recommended</th>
<th scope="col">mode</th><th scope="col">state</th><th scope="col">reasons</th></tr></thead>
<tbody>
{{range .Changes}}<tr><td>{{.T}}</td><td><b>{{.Desired}}</b></td><td>{{.Recommended}}</td>
<td>{{if .Panic}}<span class="panic">panic</span>{{else}}stable{{end}}{{if .Activator}} · <span class="act">activator</span>{{end}}</td><td>{{.State}}</td>
<td><ul class="reasons">{{range .Reasons}}<li><code>{{.Code}}</code><span>{{.Message}}</span></li>{{end}}</ul></td></tr>
{{end}}</tbody>
</table>
{{if .Omitted}}<p class="muted">{{.Omitted}} more changes are not listed.</p>{{end}}
</section>
</main>
</body>
</html>
`))

// writeHTML writes the page; svg is the chart Render drew (trusted: gonum
// escapes every text it writes).
func writeHTML(w io.Writer, svg []byte, lines []scenario.Line, rev *config.Revision) error {
	p := page{Title: title(rev), SVG: template.HTML(stripProlog(svg)), Settings: settings(rev)}
	p.Changes, p.Omitted = changes(lines)
	return pageTemplate.Execute(w, p)
}

// stripProlog drops what precedes <svg (the XML declaration and comment),
// which has no place inside HTML.
func stripProlog(doc []byte) []byte {
	for i := 0; i+4 <= len(doc); i++ {
		if string(doc[i:i+4]) == "<svg" {
			return doc[i:]
		}
	}
	return doc
}

func settings(rev *config.Revision) []setting {
	dur := func(d time.Duration) string { return seconds(d) }
	maxScale := "unlimited"
	if rev.MaxScale > 0 {
		maxScale = strconv.Itoa(int(rev.MaxScale))
	}
	return []setting{
		{"class", rev.Class}, {"metric", rev.Metric},
		{"target per pod", number(rev.Target)},
		{"target utilization", number(100*rev.TargetUtilization) + "%"},
		{"container concurrency", strconv.Itoa(int(rev.ContainerConcurrency))},
		{"stable window", dur(rev.StableWindow)}, {"panic window", dur(rev.PanicWindow)},
		{"panic threshold", number(100*rev.PanicThreshold) + "%"},
		{"target burst capacity", number(rev.TargetBurstCapacity)},
		{"min scale", strconv.Itoa(int(rev.MinScale))}, {"max scale", maxScale},
		{"initial scale", strconv.Itoa(int(rev.InitialScale))},
		{"max scale-up rate", number(rev.MaxScaleUpRate)}, {"max scale-down rate", number(rev.MaxScaleDownRate)},
		{"scale-down delay", dur(rev.ScaleDownDelay)},
		{"scale to zero", strconv.FormatBool(rev.EnableScaleToZero)},
		{"scale-to-zero grace period", dur(rev.ScaleToZeroGracePeriod)},
		{"tick interval", dur(rev.TickInterval)},
	}
}

// changes lists the decisions that differ from the previous one, at most
// maxRows of them, and how many more there were.
func changes(lines []scenario.Line) ([]change, int) {
	var out []change
	omitted := 0
	for i, l := range lines {
		d := &l.Decision
		if i > 0 {
			p := &lines[i-1].Decision
			if p.Desired == d.Desired && p.Recommended == d.Recommended && p.Panic == d.Panic &&
				p.ActivatorInPath == d.ActivatorInPath && p.State == d.State {
				continue
			}
		}
		if len(out) == maxRows {
			omitted++
			continue
		}
		c := change{T: l.T, Desired: strconv.Itoa(int(d.Desired)), Recommended: "–",
			Panic: d.Panic, Activator: d.ActivatorInPath, State: d.State.String()}
		if d.Recommended >= 0 {
			c.Recommended = strconv.Itoa(int(d.Recommended))
		}
		for _, r := range d.Reasons() {
			c.Reasons = append(c.Reasons, reasonRow{Code: string(r.Code), Message: r.Message()})
		}
		out = append(out, c)
	}
	return out, omitted
}
