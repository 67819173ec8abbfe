package compare_test

import (
	"testing"
	"time"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/scaling/whatif"
)

// TestHybridHistogramInWhatif: whatif hands the hybrid histogram to the
// learned policy. A timer every 5 minutes, ±50 s: after the policy's first
// gaps (Knative's rules) the histogram's window from about 230 s holds a
// replica for nearly every request, at a small part of a 10-minute keep-alive's
// idle time; the policy's own predictor runs without it.
func TestHybridHistogramInWhatif(t *testing.T) {
	var arrivals []int64
	jitter := []int64{-50, 20, -10, 45, 0, -35, 30, 10, -20, 50}
	for i := range 60 {
		arrivals = append(arrivals, int64(300*(i+1))+jitter[i%len(jitter)])
	}
	fn := whatif.Function{Hash: "timer", Invocations: make([]uint32, 302), Duration: 10 * time.Millisecond, Arrivals: arrivals}
	rev, err := config.NewRevision(nil, map[string]string{config.AnnotationScaleToZeroPolicy: config.ScaleToZeroLearned}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hybrid := whatif.Run(&fn, whatif.Options{Revision: rev, ColdStart: time.Second, Predictor: decider.PredictorHybridHistogram})
	// The first request and the gaps under Knative's rules start cold,
	// and some of the 200 s gaps (one in ten), below the 5th percentile.
	if hybrid.ColdStarts > 12 {
		t.Errorf("hybrid histogram: %d cold starts of 60, want at most 12", hybrid.ColdStarts)
	}
	if idle := hybrid.IdleReplicaSeconds(); idle > 60*200 {
		t.Errorf("hybrid histogram: %.0f idle replica-seconds, want under 200 a gap (a window from about 225 s to 385 s)", idle)
	}
	own := whatif.Run(&fn, whatif.Options{Revision: rev, ColdStart: time.Second})
	if own.IdleReplicaSeconds() == hybrid.IdleReplicaSeconds() && own.ColdStarts == hybrid.ColdStarts {
		t.Errorf("the policy's own predictor and the hybrid histogram decided alike (%d cold, %.0f idle): the comparison was not used",
			own.ColdStarts, own.IdleReplicaSeconds())
	}
	t.Logf("hybrid histogram: %d cold, %.0f idle replica-s; the policy's: %d, %.0f", hybrid.ColdStarts, hybrid.IdleReplicaSeconds(),
		own.ColdStarts, own.IdleReplicaSeconds())
}
