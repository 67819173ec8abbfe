package decider

import (
	"strconv"
	"time"

	"ebb.dev/ebb/pkg/behavior"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/scaling/window"
)

// podState is what the HPA class keeps about one pod: the state Kubernetes'
// pod grouping reads, and one window of samples per metric in use.
type podState struct {
	name       string
	started    time.Time // the first second the pod was listed (its startTime)
	readySince time.Time // when Ready last changed (started if never)
	phase      string
	ready      bool
	deleting   bool
	values     []*window.Buckets // one per metric of the revision, nil until sampled
	listed     int64             // the unix second of the last list that had the pod
}

// podTable holds the latest pod list of a revision and each pod's windows.
// A pod's value for a decision is the linear average of its samples over
// the window (the revision's stable window), as a metrics adapter averages
// over its own window; a pod with no sample in the window is missing.
type podTable struct {
	window  time.Duration
	metrics []config.MetricTarget
	byName  map[string]*podState
	order   []string    // the latest list, as given
	states  []*podState // byName[order[i]]: a list in the same order as the last one looks up no name
	values  []float64
	// noRequest is, per metric, a container of the latest list that has no
	// request for a utilization metric ("" when every one has): Kubernetes
	// then fails the whole metric.
	noRequest []string
}

func newPodTable(rev *config.Revision) podTable {
	return podTable{window: rev.StableWindow, metrics: rev.Metrics, byName: map[string]*podState{},
		noRequest: make([]string, len(rev.Metrics))}
}

// record takes in the pod list of one second: it replaces the previous
// list (pods not in it are forgotten) and records each pod's samples.
func (t *podTable) record(now time.Time, pods []PodSample) {
	sec := now.Unix()
	prev := t.states // every one is in byName, under its name (the last list's)
	t.order, t.states = t.order[:0], t.states[:0]
	clear(t.noRequest)
	listed := 0 // the pods of this list in byName
	for i := range pods {
		p := &pods[i]
		var st *podState
		if i < len(prev) && prev[i].name == p.Name {
			st = prev[i] // (t.states[i] is written below, after prev[i] was read)
		} else {
			st = t.byName[p.Name]
		}
		if st == nil {
			st = &podState{name: p.Name, started: now, readySince: now, ready: p.Ready, values: make([]*window.Buckets, len(t.metrics))}
			t.byName[p.Name] = st
		}
		if st.ready != p.Ready {
			st.ready, st.readySince = p.Ready, now
		}
		if !p.Started.IsZero() {
			st.started = p.Started
		}
		if !p.ReadySince.IsZero() {
			st.readySince = p.ReadySince
		}
		if st.listed != sec {
			listed++
		}
		st.phase, st.deleting, st.listed = p.Phase, p.Deleting, sec
		for m := range t.metrics {
			v, ok, noRequest := valueOf(p, t.metrics[m])
			if noRequest != "" && t.noRequest[m] == "" {
				t.noRequest[m] = noRequest
			}
			if ok {
				if st.values[m] == nil {
					st.values[m] = window.NewBuckets(t.window)
				}
				st.values[m].Record(now, v)
			}
		}
		t.order, t.states = append(t.order, p.Name), append(t.states, st)
	}
	clear(t.states[len(t.states):cap(t.states)]) // forgotten pods are not kept alive
	if listed == len(t.byName) {
		return // every pod kept is in this list: none to forget
	}
	for name, st := range t.byName {
		if st.listed != sec {
			delete(t.byName, name)
		}
	}
}

// valueOf is pod p's value of metric m in the target's unit, and false
// without a sample. A resource metric reads the pod's containers when the
// platform gave them (resourceValue); it also returns a container that has
// no request for a utilization metric.
func valueOf(p *PodSample, m config.MetricTarget) (float64, bool, string) {
	if m.Resource() && p.Containers != nil {
		return resourceValue(p.Containers, m)
	}
	if !m.Resource() || m.Utilization() && m.Container == "" {
		if v := namedValue(p, m.Metric); v != nil {
			return *v, true, ""
		}
	}
	return 0, false, "" // no sample; or an average or a container, which need the containers
}

func namedValue(p *PodSample, metric string) *float64 {
	switch metric {
	case config.MetricConcurrency:
		return p.Concurrency
	case config.MetricRPS:
		return p.RPS
	case config.MetricCPU:
		return p.CPU
	case config.MetricMemory:
		return p.Memory
	}
	return nil
}

// ContainerSample is one container's resource usage over the last second
// and its resources.requests, as a live platform measures them.
type ContainerSample struct {
	Name string
	// CPU is in cores (1 = one CPU busy for the whole second), Memory the
	// working set in bytes; nil: not measured.
	CPU, Memory *float64
	// CPURequest (cores) and MemoryRequest (bytes); 0: no request.
	CPURequest, MemoryRequest float64
}

// resourceValue is Kubernetes' resource metric of one pod: the usage summed
// over its containers (or the named one's alone), as a percentage of the
// summed requests for a utilization. The pod has no value when a container
// it reads was not measured or the named container is not there; a
// container without a request is returned for a utilization, whether
// measured or not (Kubernetes computes the requests of every pod first).
func resourceValue(cs []ContainerSample, m config.MetricTarget) (float64, bool, string) {
	var usage, request float64
	found, measured := false, true
	for i := range cs {
		c := &cs[i]
		if m.Container != "" && c.Name != m.Container {
			continue
		}
		found = true
		u, req := c.CPU, c.CPURequest
		if m.Metric == config.MetricMemory {
			u, req = c.Memory, c.MemoryRequest
		}
		if m.Utilization() && !(req > 0) {
			return 0, false, c.Name
		}
		if u == nil {
			measured = false
			continue
		}
		usage, request = usage+*u, request+req
	}
	if !found || !measured {
		return 0, false, ""
	}
	v := usage
	if m.Utilization() {
		v = usage / request * 100
	}
	return v, true, ""
}

// samples returns metric m's per-pod view at now, in list order, into out.
func (t *podTable) samples(now time.Time, m int, out []behavior.PodMetric) []behavior.PodMetric {
	out = out[:0]
	t.values = t.values[:0]
	for range t.order {
		t.values = append(t.values, 0) // filled first: the pods point into it
	}
	for i, name := range t.order {
		st := t.states[i]
		phase := st.phase
		if phase == "" {
			phase = behavior.PhaseRunning
		}
		pm := behavior.PodMetric{Name: name, Phase: phase, Ready: st.ready, Deleting: st.deleting,
			Started: st.started, ReadySince: st.readySince}
		if b := st.values[m]; b != nil {
			if last, ok := b.LastWrite(); ok && now.Unix()-last < int64(b.Len()) {
				t.values[i] = b.Linear(now)
				pm.Value = &t.values[i]
			}
		}
		out = append(out, pm)
	}
	return out
}

// derivePods is the pod list of a second that gives only the revision-wide
// totals: ready pods named pod-1 to pod-N, Running and Ready, each with an
// equal share of the concurrency and the rps (no cpu or memory). The HPA
// class uses it when a second carries no pods; it knows only the ready pods.
func derivePods(concurrency, rps float64, ready int32) []PodSample {
	if ready <= 0 {
		return []PodSample{}
	}
	n := float64(ready)
	conc, perRPS := concurrency/n, rps/n
	pods := make([]PodSample, ready)
	for i := range pods {
		pods[i] = PodSample{Name: "pod-" + strconv.Itoa(i+1), Ready: true, Concurrency: &conc, RPS: &perRPS}
	}
	return pods
}
