package decider

import (
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStepperRefusesOutOfBounds: a second of 1e308, +Inf, NaN or negative
// load never reaches the windows; the next decision says so, the numbers
// stay finite, and the count follows the valid seconds only.
func TestStepperRefusesOutOfBounds(t *testing.T) {
	bad := []float64{1e308, math.Inf(1), math.NaN(), -1, maxMetricValue * 2}
	for _, v := range bad {
		t.Run(num(v), func(t *testing.T) {
			rev := knativeDefaults()
			rev.MaxScale = 0
			st := NewStepper(rev, StepperOptions{First: at(0), Ready: 1})
			one := int32(1)
			var last Decision
			for s := int64(0); s < 10; s++ {
				in := Second{HasMetric: true, Concurrency: 70, RPS: 1, Ready: &one}
				if s == 5 {
					in.Concurrency, in.RPS = v, v
				}
				dec, ok := st.Step(at(s), in)
				if !ok {
					continue
				}
				checkFinite(t, dec)
				if s == 6 && !slices.Contains(reasonCodes(dec), MetricRefused) {
					t.Errorf("t=6: reasons %v, want %s", reasonCodes(dec), MetricRefused)
				}
				if s == 8 && slices.Contains(reasonCodes(dec), MetricRefused) {
					t.Errorf("t=8: reasons %v: the refusal was reported already", reasonCodes(dec))
				}
				last = dec
			}
			if last.Recommended != 1 || last.Stable <= 0 || last.Stable > 70 {
				t.Errorf("recommended %d with stable %v, want 1 pod at most 70 (the refused second ignored)", last.Recommended, last.Stable)
			}
		})
	}
}

// TestStepperRefusesPodSamples: an HPA pod sample out of bounds is dropped
// (as if the pod had not answered) without writing to the caller's slice.
func TestStepperRefusesPodSamples(t *testing.T) {
	rev := hpaRevision(conc(10))
	st := NewStepper(rev, StepperOptions{First: at(0), Ready: 2})
	var last Decision
	for s := int64(0); s < 8; s++ {
		ps := pods(f(10), f(10))
		if s == 3 {
			ps = pods(f(10), f(math.Inf(1)))
		}
		before := slices.Clone(ps)
		dec, ok := st.Step(at(s), Second{Pods: ps})
		if diff := cmp.Diff(before, ps); diff != "" {
			t.Fatalf("t=%d: the caller's pods changed (-before +after):\n%s", s, diff)
		}
		if !ok {
			continue
		}
		checkFinite(t, dec)
		if s == 4 && !slices.Contains(reasonCodes(dec), MetricRefused) {
			t.Errorf("t=4: reasons %v, want %s", reasonCodes(dec), MetricRefused)
		}
		last = dec
	}
	if last.Desired != 2 {
		t.Errorf("desired %d, want 2 (10 per pod against a target of 10)", last.Desired)
	}
}

// TestRecordIgnoresOutOfBounds: a direct caller of Record cannot poison
// the windows either.
func TestRecordIgnoresOutOfBounds(t *testing.T) {
	d := New(knativeDefaults(), at(0), 1)
	d.Record(at(0), 1e308, 0)
	d.Record(at(1), math.NaN(), 0)
	dec := d.Decide(Input{Now: at(2), Ready: 1, Reachable: true})
	checkFinite(t, dec)
	if dec.HasData {
		t.Errorf("decision has data %v from refused values only", dec.Stable)
	}
}

func checkFinite(t *testing.T, dec Decision) {
	t.Helper()
	vals := []float64{dec.Stable, dec.PanicAverage}
	for _, r := range dec.Reasons() {
		vals = append(vals, r.values[:]...)
	}
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("non-finite number %v in %+v (reasons %v)", v, dec, dec.Reasons())
		}
	}
}
