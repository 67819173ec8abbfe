package local

import (
	"context"
	"sync"
	"time"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/platform/local/resusage"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// usageSampler turns a replica's cumulative CPU time into cores between
// two reads. Its mutex guards the previous read only; the read itself
// (I/O) happens outside it.
type usageSampler struct {
	mu    sync.Mutex
	prev  resusage.Usage
	at    time.Time // zero before the first read
	cores *float64  // the last rate, nil before the second read
}

// sample takes a new read at now and returns the cores used since the
// previous one (nil on the first read, or when the counter went back; the
// last rate again when the previous read is less than minSampleInterval
// old) and the working set.
func (s *usageSampler) sample(u resusage.Usage, now time.Time) (cores *float64, workingSet float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, at := s.prev, s.at
	if !at.IsZero() && now.Sub(at) < minSampleInterval {
		return s.cores, float64(u.WorkingSet) // too soon for a new rate: the last one, same base
	}
	s.prev, s.at, s.cores = u, now, nil
	if c, ok := resusage.Rate(prev, u, now.Sub(at)); ok && !at.IsZero() {
		s.cores = &c
	}
	return s.cores, float64(u.WorkingSet)
}

// minSampleInterval is the shortest time a CPU rate is measured over: the
// /proc counters tick at 10 ms, so a shorter interval is mostly noise.
const minSampleInterval = 500 * time.Millisecond

// PodStates implements autoscaler.PodStater: every replica that is not
// stopping, with its readiness and, for each, the app's process tree's CPU
// (cores since the previous call) and working set against the first
// container's requests. A replica whose processes cannot be read has no
// usage that second (a missing pod for the HPA class).
func (p *Platform) PodStates(_ context.Context, key autoscaler.RevisionKey) ([]autoscaler.PodState, error) {
	s, err := p.supervisor(key)
	if err != nil {
		return nil, err
	}
	spec := s.currentSpec()
	var out []autoscaler.PodState
	for _, r := range s.replicaList() {
		if r.stopping.Load() {
			continue
		}
		st := autoscaler.PodState{Pod: autoscaler.Pod{Name: r.name, StatsAddr: r.adminAddr(), Started: r.started},
			Phase: "Running", Ready: r.ready.Load()}
		if since := r.readySince.Load(); since != 0 {
			st.ReadySince = time.Unix(0, since)
		}
		c := decider.ContainerSample{Name: spec.container, CPURequest: spec.cpuRequest, MemoryRequest: spec.memRequest}
		if pid := r.appPid.Load(); pid != 0 {
			if u, err := p.usage.Read(int(pid)); err == nil {
				var ws float64
				c.CPU, ws = r.usage.sample(u, time.Now())
				c.Memory = &ws
			}
		} else {
			st.Phase = "Pending" // its processes are not started yet
		}
		st.Containers = []decider.ContainerSample{c}
		out = append(out, st)
	}
	return out, nil
}
