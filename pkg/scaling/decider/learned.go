package decider

import (
	"time"

	"ebb.dev/ebb/pkg/scaling/learned"
)

// The learned scale-to-zero policy is its own package (pkg/scaling/learned);
// these are the names the decider's callers know it by, and the glue that
// turns its verdicts into the decider's reasons.

// Predictor names a way for the learned policy to predict the next idle gap
// (learned.Predictor).
type Predictor = learned.Predictor

// The predictors (learned.Predictor).
const (
	PredictorPhase           = learned.PredictorPhase
	PredictorSequence        = learned.PredictorSequence
	predictorHistogram       = learned.PredictorHistogram
	predictorHistogramPhase  = learned.PredictorHistogramPhase
	PredictorExact           = learned.PredictorExact
	predictorTransition      = learned.PredictorTransition
	predictorRecency         = learned.PredictorRecency
	predictorTimeOfDay       = learned.PredictorTimeOfDay
	PredictorHybridHistogram = learned.PredictorHybridHistogram
)

// LearnedMinGaps is the idle gaps the learned policy needs before it acts
// (learned.MinGaps).
const LearnedMinGaps = learned.MinGaps

// MaxLearnedStateSize bounds LearnedState's blob (learned.MaxLearnedStateSize).
const MaxLearnedStateSize = learned.MaxLearnedStateSize

// Errors of RestoreLearned (learned.Policy.Restore).
var (
	errLearnedStateForeign = learned.ErrLearnedStateForeign
	errLearnedStateCorrupt = learned.ErrLearnedStateCorrupt
)

// Details of the learned policy's reasons (learned.DetailRestored and the
// others).
const (
	detailRestored      = learned.DetailRestored
	detailSequence      = learned.DetailSequence
	detailPhase         = learned.DetailPhase
	detailPhaseRestored = learned.DetailPhaseRestored
	detailParked        = learned.DetailParked
)

// Predictors lists every predictor, the policy's (PredictorPhase) first.
func Predictors() []Predictor { return learned.Predictors() }

// ParsePredictor returns the predictor of a name of Predictor.String.
func ParsePredictor(s string) (Predictor, error) { return learned.ParsePredictor(s) }

// UsePredictor makes the learned policy predict with p from now on (it
// keeps its history). The policy's own is PredictorPhase; the others are
// there to compare it with. Without the learned policy it does nothing.
func (d *Decider) UsePredictor(p Predictor) {
	if d.learned != nil {
		d.learned.UsePredictor(p)
	}
}

// Comparison is a predictor kept outside the server to compare the
// learned policy with (learned.Comparison); KeepRange its ranges.
type (
	Comparison = learned.Comparison
	KeepRange  = learned.Range
)

// UseComparison makes the learned policy decide with c's ranges from now
// on (learned.Policy.UseComparison). Without the learned policy it does
// nothing.
func (d *Decider) UseComparison(c Comparison) {
	if d.learned != nil {
		d.learned.UseComparison(c)
	}
}

// LearnedState returns the learned policy's state as a blob for
// RestoreLearned, and its generation: a number that changes whenever the
// idle-gap history does, so that a caller saves only what changed. Nil
// and 0 without the learned policy.
func (d *Decider) LearnedState() ([]byte, uint64) {
	if d.learned == nil {
		return nil, 0
	}
	return d.learned.State()
}

// LearnedGeneration is LearnedState's generation without the blob: a
// cheap check for a change.
func (d *Decider) LearnedGeneration() uint64 {
	if d.learned == nil {
		return 0
	}
	return d.learned.Generation()
}

// RestoreLearned replaces the learned policy's history with a blob of
// LearnedState (from an earlier decider of the revision) and returns the
// number of idle gaps restored (learned.Policy.Restore says how the
// policy acts on it). A blob that does not decode leaves the history as
// it is and returns an error wrapping ErrLearnedStateForeign or
// errLearnedStateCorrupt; without the learned policy it does nothing.
func (d *Decider) RestoreLearned(blob []byte) (int, error) {
	if d.learned == nil {
		return 0, nil
	}
	return d.learned.Restore(blob)
}

// observeReady takes the ready replica count of second now, for the
// learned policy's measure of start-ups (the Stepper calls it every
// second).
func (d *Decider) observeReady(now time.Time, ready int32) {
	if d.learned != nil {
		d.learned.ObserveReady(now, ready)
	}
}

// learnedReason is the reason of a verdict of the learned policy: its
// numbers are the verdict's, in the order each kind's constructor names
// (reasons.go).
func learnedReason(v learned.Verdict) Reason {
	switch v.Kind {
	case learned.Fallback:
		return learnedFallbackReason(v.A, v.B, v.Detail)
	case learned.KeepAlive:
		return keepAliveReason(v.A, v.B, v.C, v.Detail)
	case learned.PreWarm:
		return preWarmReason(v.A, v.B, v.C, v.Detail)
	}
	return learnedReleaseReason(v.A, v.B, v.C, v.Detail)
}

// learnedScale decides the scale of a revision whose bounded
// recommendation is 0 or 1 and that may scale to zero by the learned
// policy's verdict (learned.Policy.Decide), which it returns with the
// count; false leaves it to Knative's rules.
func (d *Decider) learnedScale(in Input, dec *Decision) (learned.Verdict, int32, bool) {
	t := &d.target
	// The replica the policy keeps is weighed parked when it may be
	// parked: parking on, not refused by the platform, not parked for
	// max-parked-duration already in this idle spell.
	parkable := d.rev.Parking.Enabled && !d.parkRefused && !t.parkSpent
	v, n, ok := d.learned.Decide(in.Now, in.Ready, t.replicas > 0, t.activator, parkable)
	if v.Kind != learned.None {
		dec.add(learnedReason(v))
	}
	if ok {
		t.replicas = n
	}
	return v, n, ok
}

// PhaseMinGap is the shortest gap (seconds) whose second of the minute the
// learned policy reads (learned.PhaseMinGap).
const PhaseMinGap = learned.PhaseMinGap
