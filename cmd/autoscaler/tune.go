package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"ebb.dev/ebb/pkg/autoscaler/plot"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/scaling/whatif"
)

const tuneUsage = `usage: autoscaler tune --invocations FILE --durations FILE [-f MANIFEST]...
                       [--cold-start DURATION] [--function HASH]... [--limit N]
                       [--max-cold-start-share SHARE] [--plot FILE.svg]
                       [--arrivals random|even] [--seed N] [--start-cost DURATION]
                       [-o table|json|yaml]

Searches a revision's scale-to-zero settings with whatif on a trace (the
formats of autoscaler whatif): Knative's policy with fixed keep-alives, the
learned policy across cold-start costs, min-scale 1. Prints every setting's
cold starts, idle replica-seconds, replica starts and cost (idle
replica-seconds plus --start-cost for each start), marks the Pareto front
(no other setting has fewer cold starts and less cost), and the
annotations of the front's setting with the least cost whose cold-start
share is at most --max-cold-start-share, ready to paste (-o json or
-o yaml: the same as one document, docs/whatif.md). Its requests
arrive at random seconds of their minutes by default (--arrivals random,
--seed): settings chosen on whatif's even spread would be chosen on the
second at which that spread puts a minute's lone request.

Exit status: 0 when a setting meets the bound, 1 when none does (or the
manifests are invalid), 2 when a file cannot be read or a flag is wrong.

Flags:
`

type tuneOptions struct {
	whatifOptions
	maxShare float64
	plot     string
	output   string
}

func parseTuneFlags(args []string, errOut io.Writer) (tuneOptions, error) {
	var o tuneOptions
	fs := flag.NewFlagSet("tune", flag.ContinueOnError)
	fs.SetOutput(errOut)
	finish := o.traceFlags(fs, whatif.SpreadRandom)
	fs.Float64Var(&o.maxShare, "max-cold-start-share", 0.01, "the largest share of requests that may start cold, in [0, 1]")
	fs.StringVar(&o.plot, "plot", "", "also draw cold-start share against cost in replica-hours to FILE.svg")
	fs.StringVar(&o.output, "output", "table", "output format: table, json or yaml")
	fs.StringVar(&o.output, "o", "table", "shorthand for --output")
	fs.Usage = func() { fmt.Fprint(errOut, tuneUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if err := finish(); err != nil {
		return o, err
	}
	switch {
	case !(o.maxShare >= 0 && o.maxShare <= 1):
		return o, fmt.Errorf("--max-cold-start-share %v: must be within [0, 1], e.g. 0.01", o.maxShare)
	case o.plot != "" && !strings.HasSuffix(o.plot, ".svg"):
		return o, fmt.Errorf("--plot %q: want a FILE.svg", o.plot)
	}
	return o, checkOutput(o.output, "table", "json", "yaml")
}

func runTune(args []string, s streams) int {
	o, err := parseTuneFlags(args, s.err)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler tune: %v\n", err)
		return 2
	}
	as, base, code := manifestConfig("tune", o.manifests, s)
	if as == nil {
		return code
	}
	fns, err := loadTrace(o.whatifOptions)
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler tune: %v\n", err)
		return 2
	}
	cands := whatif.TuneCandidates()
	points := make([]whatif.Point, 0, len(cands)+1)
	p := newProgress(s.err, (len(cands)+1)*len(fns))
	for _, c := range cands {
		pt, code := tunePoint(c, base, as, fns, o, p, s)
		if code != 0 {
			return code
		}
		points = append(points, pt)
	}
	// The chosen setting, when it is the learned policy's, is also run with
	// the predictor the policy had before (the sequence predictor), for
	// the table by group.
	if twin, ok := beforeTwin(points, o.maxShare); ok {
		pt, code := tunePoint(twin, base, as, fns, o, p, s)
		if code != 0 {
			return code
		}
		points = append(points, pt)
	}
	p.finish()
	if o.plot != "" {
		if err := writeTradeoff(o.plot, points, len(fns), o.coldStart); err != nil {
			fmt.Fprintf(s.err, "autoscaler tune: %v\n", err)
			return 2
		}
	}
	w := bufio.NewWriter(s.out)
	var found bool
	if o.output == "table" {
		arrivals := o.spread.String()
		if o.spread == whatif.SpreadRandom {
			arrivals += fmt.Sprintf(" (seed %d)", o.seed)
		}
		fmt.Fprintf(w, "arrivals %s; cost: idle replica-seconds + %v for each replica start (--start-cost)\n\n", arrivals, o.startCost)
		found = writeTune(w, points, o.maxShare)
	} else {
		rep := newTuneReport(points, o)
		found = rep.Chosen != nil
		if !found {
			fmt.Fprintf(s.err, "autoscaler tune: %s\n", noneMeets(o.maxShare))
		}
		if err := writeStructured(w, o.output, rep); err != nil {
			fmt.Fprintf(s.err, "autoscaler tune: writing output: %v\n", err)
			return 2
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(s.err, "autoscaler tune: writing output: %v\n", err)
		return 2
	}
	if !found {
		return 1
	}
	return 0
}

// tunePoint runs one candidate over the revision's own annotations.
func tunePoint(c whatif.Candidate, base map[string]string, as *config.Autoscaler, fns []whatif.Function, o tuneOptions, p *progress,
	s streams) (whatif.Point, int) {
	ann := maps.Clone(base)
	maps.Copy(ann, c.Annotations)
	rev, code := checkedRevision(as, ann, s)
	if rev == nil {
		return whatif.Point{}, code
	}
	pt := whatif.Point{Candidate: c, Total: whatif.NewSummary(whatif.PolicyOf(rev))}
	wo := o.options(rev)
	wo.Predictor = c.Predictor
	for j, r := range simulateAll(fns, wo, p.quiet()) {
		pt.Add(&fns[j], &r)
		p.done()
	}
	return pt, 0
}

// beforeTwin returns the chosen point's candidate with the predictor the
// learned policy had before (decider.PredictorSequence), when the chosen
// point is the learned policy's and tune has not run that twin.
func beforeTwin(points []whatif.Point, maxShare float64) (whatif.Candidate, bool) {
	best := whatif.Choose(points, whatif.ParetoFront(points), maxShare)
	if best < 0 || points[best].Annotations[config.AnnotationScaleToZeroPolicy] != config.ScaleToZeroLearned ||
		points[best].Twin(points, decider.PredictorSequence) != nil {
		return whatif.Candidate{}, false
	}
	c := points[best].Candidate
	c.Name += ", before: sequence predictor"
	c.Series, c.Label, c.Predictor = "before: sequence predictor (the chosen setting)", "before", decider.PredictorSequence
	return c, true
}

// writeTune prints the table, the front and the chosen setting; it reports
// whether a setting meets the bound.
func writeTune(w io.Writer, points []whatif.Point, maxShare float64) bool {
	front := whatif.ParetoFront(points)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "setting\tcold starts\tshare\tidle replica-s\treplica starts\tcost replica-s\treplica-s\tPareto front")
	for i := range points {
		t := &points[i].Total
		mark := ""
		switch {
		case front[i]:
			mark = "*"
		case points[i].Comparison():
			mark = "(comparison)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.5f\t%.0f\t%d\t%.0f\t%.0f\t%s\n", points[i].Name, t.ColdStarts, t.ColdStartShare(), t.IdleReplicaSeconds(),
			t.ReplicaStarts, t.Cost(), t.ReplicaSeconds(), mark)
	}
	tw.Flush()
	best := whatif.Choose(points, front, maxShare)
	if best < 0 {
		fmt.Fprintf(w, "\n%s\n", noneMeets(maxShare))
		return false
	}
	t := &points[best].Total
	fmt.Fprintf(w, "\nchosen for a cold-start share of at most %v: %s (cold starts %d, share %.5f, idle replica-seconds %.0f, "+
		"replica starts %d, cost %.0f replica-seconds)\n",
		maxShare, points[best].Name, t.ColdStarts, t.ColdStartShare(), t.IdleReplicaSeconds(), t.ReplicaStarts, t.Cost())
	fmt.Fprintln(w, "annotations (spec.template.metadata.annotations):")
	for _, kv := range points[best].SortedAnnotations() {
		fmt.Fprintf(w, "  %s: %q\n", kv[0], kv[1])
	}
	writeGroups(w, points, best)
	return true
}

// writeGroups prints the chosen point by group of functions: what it cost,
// what the same setting cost with the predictor the learned policy had
// before (when tune ran it), and what the learned policy's decisions
// rested on: the second of the minute at which the latest long gaps ended
// (phase), the gaps that followed a gap like the latest one (sequence),
// the whole history, or Knative's rules for want of history.
func writeGroups(w io.Writer, points []whatif.Point, best int) {
	pt := &points[best]
	before := pt.Twin(points, decider.PredictorSequence)
	fmt.Fprintf(w, "\nby function group (requests a day), %s:\n", pt.Name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "group\tfunctions\trequests\tcold starts\tidle replica-s\t"
	if before != nil {
		head += "before: cold starts\tbefore: idle replica-s\t"
	}
	fmt.Fprintln(tw, head+"decided on: phase\tsequence\thistory\tknative\t")
	for g, name := range whatif.GroupNames {
		t := &pt.Groups[g].Total
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t", name, pt.Groups[g].Functions, t.Requests, t.ColdStarts, t.IdleReplicaSeconds())
		if before != nil {
			b := &before.Groups[g].Total
			fmt.Fprintf(tw, "%d\t%.0f\t", b.ColdStarts, b.IdleReplicaSeconds())
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t\n", t.Learned.Phase, t.Learned.Sequence, t.Learned.History, t.Learned.Fallback)
	}
	tw.Flush()
}

// writeTradeoff draws the points to path (a log scale of idle time when
// min-scale 1 dwarfs the others).
func writeTradeoff(path string, points []whatif.Point, functions int, cold time.Duration) error {
	front := whatif.ParetoFront(points)
	var pts []plot.TradeoffPoint
	for i := range points {
		pts = append(pts, plot.TradeoffPoint{Label: points[i].Label, Series: points[i].Series, Front: front[i],
			CostReplicaSeconds: points[i].Total.Cost(), ColdStartShare: points[i].Total.ColdStartShare()})
	}
	var b bytes.Buffer
	title := fmt.Sprintf("cold starts against idle replicas: %d functions, --cold-start %v (autoscaler tune)", functions, cold)
	if err := plot.Tradeoff(&b, title, pts); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing the plot: %w", err)
	}
	return nil
}

// noneMeets says that no setting meets the bound, and what to try.
func noneMeets(maxShare float64) string {
	return fmt.Sprintf("no setting keeps the cold-start share at or below %v; raise --max-cold-start-share or try min-scale", maxShare)
}

// tuneReport is tune's -o json and -o yaml: the table, the front and the
// chosen setting as one document. Its fields are a contract
// (docs/whatif.md, "tune's structured output"); new fields may be added,
// none renamed.
type tuneReport struct {
	Arrivals          string        `json:"arrivals"`
	Seed              *uint64       `json:"seed,omitempty"`
	ColdStartSeconds  float64       `json:"coldStartSeconds"`
	StartCostSeconds  float64       `json:"startCostSeconds"`
	MaxColdStartShare float64       `json:"maxColdStartShare"`
	Settings          []tuneSetting `json:"settings"`
	// Chosen is null when no setting meets the bound (exit status 1).
	Chosen *tuneChosen `json:"chosen"`
}

// tuneSetting is one row of the table.
type tuneSetting struct {
	Name               string            `json:"name"`
	Annotations        map[string]string `json:"annotations"`
	ColdStarts         int64             `json:"coldStarts"`
	ColdStartShare     float64           `json:"coldStartShare"`
	IdleReplicaSeconds float64           `json:"idleReplicaSeconds"`
	ReplicaStarts      int64             `json:"replicaStarts"`
	CostReplicaSeconds float64           `json:"costReplicaSeconds"`
	ReplicaSeconds     float64           `json:"replicaSeconds"`
	ParetoFront        bool              `json:"paretoFront"`
	// Comparison: run with another predictor than its annotations give,
	// for comparison only (never chosen).
	Comparison bool `json:"comparison"`
}

// tuneChosen is the chosen setting and its table by group of functions.
type tuneChosen struct {
	Name        string            `json:"name"`
	Annotations map[string]string `json:"annotations"`
	Groups      []tuneGroup       `json:"groups"`
}

// tuneGroup is one group's row; Before is the same setting with the
// predictor the learned policy had before, when tune ran it.
type tuneGroup struct {
	Group              string       `json:"group"`
	Functions          int          `json:"functions"`
	Requests           int64        `json:"requests"`
	ColdStarts         int64        `json:"coldStarts"`
	IdleReplicaSeconds float64      `json:"idleReplicaSeconds"`
	Before             *tuneBefore  `json:"before,omitempty"`
	DecidedOn          tuneDecision `json:"decidedOn"`
}

type tuneBefore struct {
	ColdStarts         int64   `json:"coldStarts"`
	IdleReplicaSeconds float64 `json:"idleReplicaSeconds"`
}

// tuneDecision counts the learned policy's decisions by what they rested on.
type tuneDecision struct {
	Phase    int64 `json:"phase"`
	Sequence int64 `json:"sequence"`
	History  int64 `json:"history"`
	Knative  int64 `json:"knative"`
}

func newTuneReport(points []whatif.Point, o tuneOptions) *tuneReport {
	rep := &tuneReport{Arrivals: o.spread.String(), ColdStartSeconds: o.coldStart.Seconds(), StartCostSeconds: o.startCost.Seconds(),
		MaxColdStartShare: o.maxShare, Settings: make([]tuneSetting, 0, len(points))}
	if o.spread == whatif.SpreadRandom {
		seed := o.seed
		rep.Seed = &seed
	}
	front := whatif.ParetoFront(points)
	for i := range points {
		t := &points[i].Total
		rep.Settings = append(rep.Settings, tuneSetting{Name: points[i].Name, Annotations: nonNil(points[i].Annotations),
			ColdStarts: t.ColdStarts, ColdStartShare: t.ColdStartShare(), IdleReplicaSeconds: t.IdleReplicaSeconds(),
			ReplicaStarts: t.ReplicaStarts, CostReplicaSeconds: t.Cost(), ReplicaSeconds: t.ReplicaSeconds(),
			ParetoFront: front[i], Comparison: points[i].Comparison()})
	}
	best := whatif.Choose(points, front, o.maxShare)
	if best < 0 {
		return rep
	}
	pt := &points[best]
	before := pt.Twin(points, decider.PredictorSequence)
	c := &tuneChosen{Name: pt.Name, Annotations: nonNil(pt.Annotations)}
	for g, name := range whatif.GroupNames {
		t := &pt.Groups[g].Total
		row := tuneGroup{Group: name, Functions: pt.Groups[g].Functions, Requests: t.Requests, ColdStarts: t.ColdStarts,
			IdleReplicaSeconds: t.IdleReplicaSeconds(), DecidedOn: tuneDecision{Phase: t.Learned.Phase, Sequence: t.Learned.Sequence,
				History: t.Learned.History, Knative: t.Learned.Fallback}}
		if before != nil {
			b := &before.Groups[g].Total
			row.Before = &tuneBefore{ColdStarts: b.ColdStarts, IdleReplicaSeconds: b.IdleReplicaSeconds()}
		}
		c.Groups = append(c.Groups, row)
	}
	rep.Chosen = c
	return rep
}

// nonNil is m, or an empty map for nil (a setting without annotations is
// {} in the output, not null).
func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
