package local

import (
	"testing"
	"time"

	"ebb.dev/ebb/pkg/platform/local/resusage"
)

func TestUsageSampler(t *testing.T) {
	var s usageSampler
	t0 := time.Unix(1000, 0)
	u := func(cpu time.Duration) resusage.Usage {
		return resusage.Usage{CPU: cpu, WorkingSet: 1 << 20, Source: resusage.SourceProc}
	}
	steps := []struct {
		at    time.Duration
		cpu   time.Duration
		cores float64 // -1: nil
	}{
		{0, time.Second, -1},                            // first read: no rate
		{time.Second, 1500 * time.Millisecond, 0.5},     // half a core
		{1200 * time.Millisecond, 5 * time.Second, 0.5}, // too soon: the last rate
		{2 * time.Second, 3500 * time.Millisecond, 2},   // from the read at 1s: 2 s of CPU in 1 s
		{3 * time.Second, 100 * time.Millisecond, -1},   // the counter went back (restart)
		{4 * time.Second, 200 * time.Millisecond, 0.1},  // a new base
	}
	for _, st := range steps {
		got, ws := s.sample(u(st.cpu), t0.Add(st.at))
		if ws != 1<<20 {
			t.Errorf("at %v: working set %v", st.at, ws)
		}
		switch {
		case st.cores < 0 && got != nil:
			t.Errorf("at %v: cores %v, want none", st.at, *got)
		case st.cores >= 0 && (got == nil || *got < st.cores-1e-9 || *got > st.cores+1e-9):
			t.Errorf("at %v: cores %v, want %v", st.at, got, st.cores)
		}
	}
}
