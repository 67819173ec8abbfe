package whatif

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
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
