package autoscaler

import (
	"slices"
	"testing"
	"time"
)

// TestConfigChangeKeepsZero: a revision resting at zero stays at zero
// when config-autoscaler or its annotations change (its decider restarts
// with the new settings, not at its initial scale), and a request still
// wakes it.
func TestConfigChangeKeepsZero(t *testing.T) {
	for _, change := range []string{"config", "annotations"} {
		t.Run(change, func(t *testing.T) {
			a, p, log, rested := restingHello(t)
			p.mu.Lock()
			before := len(p.scales)
			p.mu.Unlock()
			var err error
			if change == "config" {
				err = a.SetConfig(map[string]string{"stable-window": "8s", "scale-to-zero-grace-period": "4s"})
			} else {
				err = a.Upsert(hello, map[string]string{"autoscaling.knative.dev/target": "50"})
			}
			if err != nil {
				t.Fatal(err)
			}
			now := rested + time.Second
			for ; now < rested+2*time.Minute; now += time.Second {
				stepTo(a, at(now))
			}
			p.mu.Lock()
			after := append([]int32(nil), p.scales[before:]...)
			p.mu.Unlock()
			for _, n := range after {
				if n != 0 {
					t.Fatalf("scales after the change: %v; want none above 0 (last decisions %+v)", after, log.decs[len(log.decs)-3:])
				}
			}
			if st := statusOf(t, a); st.Desired != 0 {
				t.Errorf("after the change: %+v, want desired 0", st)
			}
			// A request at the activator still wakes it.
			for end := now + 5*time.Second; now < end; now += time.Second {
				if err := a.Ingest(activatorReport(t0+int64(now/time.Second)-1, 1)); err != nil {
					t.Fatal(err)
				}
				stepTo(a, at(now))
			}
			if st := statusOf(t, a); st.Desired < 1 {
				t.Errorf("a request after the change: %+v, want desired 1 or more", st)
			}
		})
	}
}

// zeroPlatform says which revisions' scale targets were scaled to zero.
type zeroPlatform struct {
	*fakePlatform
	zero bool
}

func (p *zeroPlatform) ScaledToZero(RevisionKey) bool { return p.zero }

// TestRestartAtZeroKeepsZero: a decider that starts for a revision whose
// scale target the platform says was scaled to zero (an autoscaler
// restart, a bucket changing hands) keeps it at zero until a request
// comes; one whose scale target is new starts at its initial scale.
func TestRestartAtZeroKeepsZero(t *testing.T) {
	for _, zero := range []bool{true, false} {
		p := &zeroPlatform{fakePlatform: &fakePlatform{pods: map[RevisionKey][]Pod{}}, zero: zero}
		a := New(Options{Platform: p, Scraper: &fakeScraper{}, StatsAuth: testAuth(), Clock: &fakeClock{now: time.Unix(t0, 0)}})
		if err := a.SetConfig(map[string]string{"stable-window": "6s", "scale-to-zero-grace-period": "4s"}); err != nil {
			t.Fatal(err)
		}
		if err := a.Upsert(hello, nil); err != nil {
			t.Fatal(err)
		}
		now := time.Duration(0)
		for ; now < time.Minute; now += time.Second {
			stepTo(a, at(now))
		}
		p.mu.Lock()
		scales := append([]int32(nil), p.scales...)
		p.mu.Unlock()
		woke := slices.ContainsFunc(scales, func(n int32) bool { return n > 0 })
		if woke == zero {
			t.Errorf("scaled to zero before: %v; scales %v (want a scale to 1 only for a new scale target)", zero, scales)
		}
		if !zero {
			continue
		}
		for end := now + 5*time.Second; now < end; now += time.Second {
			if err := a.Ingest(activatorReport(t0+int64(now/time.Second)-1, 1)); err != nil {
				t.Fatal(err)
			}
			stepTo(a, at(now))
		}
		if st := statusOf(t, a); st.Desired < 1 {
			t.Errorf("a request after the restart: %+v, want desired 1 or more", st)
		}
	}
}
