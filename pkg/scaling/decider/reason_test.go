package decider

import (
	"math"
	"testing"
)

// TestMessageHasNoNegativeZero: a stable average of -0 (0 times a
// negative, as a window can produce) reads "0" in the sentence.
func TestMessageHasNoNegativeZero(t *testing.T) {
	negZero := math.Copysign(0, -1)
	got := stableTargetReason(negZero, 10, negZero).Message()
	if want := "stable average 0 over a per-pod target of 10 needs 0 pods"; got != want {
		t.Errorf("message for a -0 average = %q, want %q", got, want)
	}
}
