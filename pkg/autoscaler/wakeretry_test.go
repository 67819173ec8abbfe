package autoscaler

import (
	"slices"
	"testing"
	"time"
)

// TestWakeRefusedScaleIsRetried: a revision woken from rest whose scale
// to 1 the platform refuses for 10 s (a loaded API server answering 429
// and 504) is scaled as soon as a write is accepted, while the activator
// still holds the request (15 s): each decision applies again what the
// last could not.
func TestWakeRefusedScaleIsRetried(t *testing.T) {
	a, p, _, rested := restingHello(t)
	p.mu.Lock()
	before := len(p.scales)
	p.failScale = true
	p.mu.Unlock()
	now := rested + time.Second
	woke := now
	var scaledAt time.Duration
	for end := now + 15*time.Second; now < end; now += time.Second {
		if now-woke >= 10*time.Second {
			p.mu.Lock()
			p.failScale = false
			p.mu.Unlock()
		}
		if err := a.Ingest(activatorReport(t0+int64(now/time.Second)-1, 1)); err != nil {
			t.Fatal(err)
		}
		stepTo(a, at(now))
		p.mu.Lock()
		if scaledAt == 0 && slices.Contains(p.scales[before:], 1) {
			scaledAt = now - woke
		}
		p.mu.Unlock()
	}
	if scaledAt == 0 {
		t.Fatal("the wake's scale to 1 was never applied while the request was held")
	}
	if scaledAt > 13*time.Second {
		t.Errorf("scaled %v after the wake, want within a tick (2s) of the platform accepting it at 10s", scaledAt)
	}
}
