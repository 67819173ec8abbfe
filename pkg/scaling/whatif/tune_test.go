package whatif

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
)

func point(name string, cold, requests, idleSeconds int64) Point {
	return Point{Candidate: Candidate{Name: name}, Total: Result{ColdStarts: cold, Requests: requests, idleNs: idleSeconds * 1e9}}
}

func TestParetoFrontAndChoose(t *testing.T) {
	ps := []Point{
		point("knative", 100, 1000, 50),  // front: the least idle
		point("keep 10m", 10, 1000, 400), // front
		point("learned", 30, 1000, 60),   // front
		point("worse", 40, 1000, 70),     // beaten by learned
		point("tie", 30, 1000, 60),       // equal to learned: both stay
	}
	front := ParetoFront(ps)
	if diff := cmp.Diff([]bool{true, true, true, false, true}, front); diff != "" {
		t.Errorf("front (-want +got):\n%s", diff)
	}
	tests := []struct {
		share float64
		want  int
	}{{0.5, 0}, {0.05, 2}, {0.02, 1}, {0.001, -1}}
	for _, tt := range tests {
		if got := Choose(ps, front, tt.share); got != tt.want {
			t.Errorf("Choose(%v) = %d, want %d", tt.share, got, tt.want)
		}
	}
}

// TestTuneCandidatesAreValid: every candidate's annotations make a valid
// revision, and the names are distinct.
func TestTuneCandidatesAreValid(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range TuneCandidates() {
		if seen[c.Name] {
			t.Errorf("candidate %q twice", c.Name)
		}
		seen[c.Name] = true
		if _, err := config.NewRevision(nil, c.Annotations, nil); err != nil {
			t.Errorf("candidate %q: %v", c.Name, err)
		}
	}
}

// TestComparisonPoints: a point kept for comparison (another predictor)
// is never on the front nor chosen, and does not push others off it.
func TestComparisonPoints(t *testing.T) {
	ps := []Point{point("knative", 100, 1000, 50), point("learned", 30, 1000, 60), point("before", 10, 1000, 40)}
	ps[2].Predictor = decider.PredictorSequence
	front := ParetoFront(ps)
	if diff := cmp.Diff([]bool{true, true, false}, front); diff != "" {
		t.Errorf("front (-want +got):\n%s", diff)
	}
	if got := Choose(ps, front, 0.5); got != 0 {
		t.Errorf("Choose = %d, want 0 (the comparison point is never chosen)", got)
	}
	var hybrid, before int
	for _, c := range TuneCandidates() {
		switch c.Predictor {
		case decider.PredictorHybridHistogram:
			hybrid++
		case decider.PredictorSequence:
			before++
			if twin := (&Point{Candidate: c}).Twin([]Point{{Candidate: Candidate{Annotations: c.Annotations}}}, decider.PredictorPhase); twin == nil {
				t.Errorf("%s: no twin with the policy's predictor", c.Name)
			}
		}
	}
	if hybrid != 1 || before == 0 {
		t.Errorf("%d hybrid histogram and %d before candidates, want 1 and some", hybrid, before)
	}
}

func TestGroupOf(t *testing.T) {
	day := func(n uint32) []uint32 { return append(make([]uint32, minutesPerDay-1), n) }
	tests := []struct {
		name string
		inv  []uint32
		want int
	}{
		{"one a day", day(1), 0},
		{"100 a day", day(100), 1},
		{"1,000 a day", day(1000), 2},
		{"10,000 a day", day(10000), 3},
		{"20,000 a day", day(20000), 4},
		{"one in a one-minute trace: 1,440 a day", []uint32{1}, 3},
	}
	for _, tt := range tests {
		if got := groupOf(&Function{Invocations: tt.inv}); got != tt.want {
			t.Errorf("%s: group %d (%s), want %d (%s)", tt.name, got, GroupNames[got], tt.want, GroupNames[tt.want])
		}
	}
}

// TestChooseOnCost: tune chooses on idle replica-seconds plus the start
// cost of each replica start: a setting with less idle time that starts
// many more replicas loses to one that starts few, once starts cost.
func TestChooseOnCost(t *testing.T) {
	ps := []Point{point("keep", 10, 1000, 500), point("prewarm", 10, 1000, 400)}
	ps[0].Total.ReplicaStarts, ps[1].Total.ReplicaStarts = 10, 200
	if got := Choose(ps, ParetoFront(ps), 0.5); got != 1 {
		t.Errorf("starts free: chose %d, want 1 (less idle time)", got)
	}
	for i := range ps {
		ps[i].Total.StartCost = time.Second // keep 510, prewarm 600
	}
	front := ParetoFront(ps)
	if diff := cmp.Diff([]bool{true, false}, front); diff != "" {
		t.Errorf("front at 1s a start (-want +got):\n%s", diff)
	}
	if got := Choose(ps, front, 0.5); got != 0 {
		t.Errorf("1s a start: chose %d, want 0 (cost 510 against 600)", got)
	}
}
