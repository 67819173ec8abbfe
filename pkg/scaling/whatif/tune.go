package whatif

import (
	"maps"
	"slices"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// Candidate is one setting `autoscaler tune` tries: annotations applied
// over the revision's own. Each candidate sets every annotation the search
// varies, so that its annotations, pasted as they are, give its result.
type Candidate struct {
	Name        string
	Annotations map[string]string
	// Series and Label place the candidate on tune's chart: the line it
	// belongs to and its short name there.
	Series, Label string
	// Predictor is the learned policy's predictor (its own when zero).
	// A candidate with another one is there for comparison only
	// (Comparison): its annotations alone would not give its result, so
	// it is never chosen, nor on the Pareto front.
	Predictor decider.Predictor
}

// Comparison reports whether the candidate is there for comparison only.
func (c *Candidate) Comparison() bool { return c.Predictor != decider.PredictorPhase }

// TuneCandidates are the settings tune searches: Knative's policy with
// fixed keep-alives (scale-to-zero-pod-retention-period), the learned
// policy across cold-start costs (alone, and with a retention while it has
// too little history), and min-scale 1 (never cold, always a replica);
// and, for comparison only, the learned policy as it was before it read
// the second of the minute (the sequence predictor, with the pre-warm
// lead of 10s it had by default and with the 3s lead and 5m retention
// of the keep-alive setting it was tuned to) and with Shahrad et al.'s
// hybrid histogram.
func TuneCandidates() []Candidate {
	var cs []Candidate
	knative := func(name, retention string) Candidate {
		return Candidate{Name: name, Series: "Knative, fixed keep-alive", Label: "keep " + retention, Annotations: map[string]string{
			config.AnnotationScaleToZeroPolicy: config.ScaleToZeroKnative, config.AnnotationScaleToZeroPodRetention: retention,
			config.AnnotationMinScale: "0"}}
	}
	learned := func(name, cost, retention, lead string) Candidate {
		series := "learned (cold-start-cost)"
		if retention != "0s" {
			series = "learned, retention " + retention
		}
		return Candidate{Name: name, Series: series, Label: cost, Annotations: map[string]string{
			config.AnnotationScaleToZeroPolicy: config.ScaleToZeroLearned, config.AnnotationColdStartCost: cost,
			config.AnnotationScaleToZeroPodRetention: retention, config.AnnotationPrewarmLead: lead, config.AnnotationMinScale: "0"}}
	}
	cs = append(cs, knative("knative", "0s"))
	cs[0].Label = "Knative's defaults"
	for _, r := range []string{"1m", "2m", "5m", "10m"} {
		cs = append(cs, knative("knative, keep-alive "+r, r))
	}
	auto := config.PrewarmLeadAutoText
	for _, c := range []string{"30s", "1m", "2m", "3m", "5m", "15m", "60m"} {
		cs = append(cs, learned("learned, cold-start-cost "+c, c, "0s", auto))
	}
	for _, c := range []string{"5m", "15m", "60m"} {
		cs = append(cs, learned("learned, cold-start-cost "+c+", retention 5m", c, "5m", auto))
	}
	// For comparison: the policy before it read the second of the minute
	// (the sequence predictor) with its former default lead, and with the
	// keep-alive setting it was tuned to; and Shahrad et al.'s hybrid
	// histogram policy, the published anchor.
	for _, c := range []string{"30s", "2m", "15m", "60m"} {
		b := learned("learned, cold-start-cost "+c+", lead 10s, before: sequence predictor", c, "0s", "10s")
		b.Series, b.Predictor = "before: sequence predictor, lead 10s", decider.PredictorSequence
		cs = append(cs, b)
	}
	for _, c := range []string{"5m", "15m", "60m"} {
		b := learned("learned, cold-start-cost "+c+", retention 5m, lead 3s, before: sequence predictor", c, "5m", "3s")
		b.Series, b.Predictor = "before: sequence predictor, retention 5m, lead 3s", decider.PredictorSequence
		cs = append(cs, b)
	}
	hybrid := learned("learned, hybrid histogram predictor (Shahrad et al.)", "2m", "0s", auto)
	hybrid.Series, hybrid.Label, hybrid.Predictor = "hybrid histogram (Shahrad et al.)", "hybrid histogram", decider.PredictorHybridHistogram
	cs = append(cs, hybrid)
	cs = append(cs, Candidate{Name: "min-scale 1", Label: "min-scale 1", Annotations: map[string]string{
		config.AnnotationScaleToZeroPolicy: config.ScaleToZeroKnative, config.AnnotationMinScale: "1"}})
	return cs
}

// Point is a candidate and what it cost over the trace (a merged Result).
type Point struct {
	Candidate
	Total Result
	// Groups holds the totals of each group of functions (GroupOf).
	Groups [groupCount]Group
}

// Group is what a candidate cost on one group of functions.
type Group struct {
	Functions int
	Total     Result
}

// Add merges one function's result into the point's total and group.
func (p *Point) Add(f *Function, r *Result) {
	p.Total.Merge(r)
	g := &p.Groups[groupOf(f)]
	g.Functions++
	g.Total.Merge(r)
}

// Twin returns the comparison point of ps with p's annotations and the
// predictor pred, or nil.
func (p *Point) Twin(ps []Point, pred decider.Predictor) *Point {
	for i := range ps {
		if ps[i].Predictor == pred && maps.Equal(ps[i].Annotations, p.Annotations) {
			return &ps[i]
		}
	}
	return nil
}

// ParetoFront marks the points that no other point beats on both axes:
// none has at most as many cold starts and at most as much cost (Cost:
// idle replica-seconds plus the start cost of each replica start), and
// less of one of them.
func ParetoFront(ps []Point) []bool {
	front := make([]bool, len(ps))
	for i := range ps {
		front[i] = !ps[i].Comparison()
		for j := range ps {
			if front[i] && i != j && !ps[j].Comparison() && dominates(&ps[j].Total, &ps[i].Total) {
				front[i] = false
				break
			}
		}
	}
	return front
}

func dominates(a, b *Result) bool {
	ca, cb := a.Cost(), b.Cost()
	return a.ColdStarts <= b.ColdStarts && ca <= cb && (a.ColdStarts < b.ColdStarts || ca < cb)
}

// Choose returns the point of the front with the least cost (Cost) whose cold-start share is at most maxShare (the first
// among equals), or -1 when none is.
func Choose(ps []Point, front []bool, maxShare float64) int {
	best := -1
	for i := range ps {
		if !front[i] || ps[i].Total.ColdStartShare() > maxShare {
			continue
		}
		if best < 0 || ps[i].Total.Cost() < ps[best].Total.Cost() {
			best = i
		}
	}
	return best
}

// SortedAnnotations returns the candidate's annotations as key, value
// pairs in key order.
func (c *Candidate) SortedAnnotations() [][2]string {
	var out [][2]string
	for _, k := range slices.Sorted(maps.Keys(c.Annotations)) {
		out = append(out, [2]string{k, c.Annotations[k]})
	}
	return out
}

// Groups of functions by traffic, for tune's table by group: requests per
// day below each bound (the last has none).
var groupBounds = []int64{24, 240, 1440, 14400}

// groupCount is the number of groups: one more than bounds.
const groupCount = 5

// GroupNames name the groups of GroupOf.
var GroupNames = [groupCount]string{"under 1 an hour", "1 to 10 an hour", "10 to 60 an hour", "1 to 10 a minute", "10 a minute or more"}

// groupOf returns the group of a function by its requests per day (a
// trace of another length is scaled to a day).
func groupOf(f *Function) int {
	perDay := f.requests()
	if n := int64(len(f.Invocations)); n > 0 && n != minutesPerDay {
		perDay = perDay * minutesPerDay / n
	}
	for g, b := range groupBounds {
		if perDay < b {
			return g
		}
	}
	return len(groupBounds)
}
