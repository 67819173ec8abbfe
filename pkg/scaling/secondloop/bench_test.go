package secondloop

import (
	"testing"
	"time"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/stats"
)

// benchRev is a revision with Knative's defaults (60 s stable window), or
// the learned policy (a larger state to copy).
func benchRev(b *testing.B, learned bool) *config.Revision {
	b.Helper()
	ann := map[string]string{}
	if learned {
		ann[config.AnnotationScaleToZeroPolicy] = config.ScaleToZeroLearned
	}
	r, err := config.NewRevision(nil, ann, nil)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// quietSink applies and records nothing.
type quietSink struct{ rev *config.Revision }

func (s quietSink) Start(sec int64, ready int32) *decider.Stepper {
	return decider.NewStepper(s.rev, decider.StepperOptions{First: time.Unix(sec, 0), Ready: ready})
}
func (quietSink) Decided(int64, *decider.Decision, bool) {}
func (quietSink) Apply(*decider.Decision) bool           { return true }
func (quietSink) Final(int64, decider.Second)            {}

// benchLoad is the load of second i: a running revision with one replica
// and steady light load (it never goes to zero, so every tick may and
// the loop copies the stepper at each).
func benchLoad(i int) float64 { return float64(1 + i%3) }

// BenchmarkClose compares one second closed through the Loop (its hold:
// a copy of the stepper at every tick of a running revision) with the
// same second stepped straight into the stepper (the baseline).
func BenchmarkClose(b *testing.B) {
	for _, learned := range []bool{false, true} {
		name := "knative"
		if learned {
			name = "learned"
		}
		rev := benchRev(b, learned)
		b.Run(name+"/stepper", func(b *testing.B) {
			st := decider.NewStepper(rev, decider.StepperOptions{First: time.Unix(0, 0), Ready: 1})
			var dec decider.Decision
			ready := int32(1)
			reports := []stats.Stat{{PodName: "act", Period: time.Second}}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				reports[0].AverageConcurrency = benchLoad(i)
				st.StepInto(time.Unix(int64(i), 0), decider.SecondOf(&ready, true, 0, 0, reports), &dec)
			}
		})
		b.Run(name+"/loop", func(b *testing.B) {
			var l Loop
			s := quietSink{rev}
			reports := []stats.Stat{{PodName: "act", Period: time.Second}}
			c := Closing{Ready: 1, Scraped: true}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				reports[0].AverageConcurrency = benchLoad(i)
				c.Sec, c.Reports = int64(i), reports
				l.Close(&c, s)
			}
		})
	}
}
