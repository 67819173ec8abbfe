package whatif

import (
	"maps"
	"slices"

	"ebb.dev/ebb/pkg/config"
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
}

// TuneCandidates are the settings tune searches: Knative's policy with
// fixed keep-alives (scale-to-zero-pod-retention-period), the learned
// policy across cold-start costs (alone, and with a retention while it has
// too little history, with the default and a 3s pre-warm lead), and
// min-scale 1 (never cold, always a replica).
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
		if lead != config.DefaultPrewarmLead.String() {
			series += ", lead " + lead
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
	lead := config.DefaultPrewarmLead.String()
	for _, c := range []string{"30s", "1m", "2m", "5m", "15m", "60m"} {
		cs = append(cs, learned("learned, cold-start-cost "+c, c, "0s", lead))
	}
	for _, c := range []string{"15m", "60m"} {
		cs = append(cs, learned("learned, cold-start-cost "+c+", retention 5m", c, "5m", lead))
	}
	// A short lead fits replicas that start within a second or so: it
	// covers the start and a tick, and each pre-warm idles that much less.
	for _, c := range []string{"5m", "14m", "60m"} {
		cs = append(cs, learned("learned, cold-start-cost "+c+", retention 5m, lead 3s", c, "5m", "3s"))
	}
	cs = append(cs, Candidate{Name: "min-scale 1", Label: "min-scale 1", Annotations: map[string]string{
		config.AnnotationScaleToZeroPolicy: config.ScaleToZeroKnative, config.AnnotationMinScale: "1"}})
	return cs
}

// Point is a candidate and what it cost over the trace (a merged Result).
type Point struct {
	Candidate
	Total Result
}

// ParetoFront marks the points that no other point beats on both axes:
// none has at most as many cold starts and at most as many idle
// replica-seconds, and fewer of one of them.
func ParetoFront(ps []Point) []bool {
	front := make([]bool, len(ps))
	for i := range ps {
		front[i] = true
		for j := range ps {
			if i != j && dominates(&ps[j].Total, &ps[i].Total) {
				front[i] = false
				break
			}
		}
	}
	return front
}

func dominates(a, b *Result) bool {
	return a.ColdStarts <= b.ColdStarts && a.idleNs <= b.idleNs && (a.ColdStarts < b.ColdStarts || a.idleNs < b.idleNs)
}

// Choose returns the point of the front with the fewest idle
// replica-seconds whose cold-start share is at most maxShare (the first
// among equals), or -1 when none is.
func Choose(ps []Point, front []bool, maxShare float64) int {
	best := -1
	for i := range ps {
		if !front[i] || ps[i].Total.ColdStartShare() > maxShare {
			continue
		}
		if best < 0 || ps[i].Total.idleNs < ps[best].Total.idleNs {
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
