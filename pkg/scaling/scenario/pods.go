package scenario

import (
	"fmt"
	"math"
	"time"

	"ebb.dev/ebb/pkg/scaling/decider"
)

// maxPods bounds the pods of one sample: a typo must not cost much, and a
// revision with more pods than this is not replayed second by second.
const maxPods = 10000

// maxContainers bounds the containers of one pod (Kubernetes has no limit;
// real pods have a few).
const maxContainers = 100

// rawPod is one entry of samples[].pods.
type rawPod struct {
	Name        string   `json:"name"`
	Phase       string   `json:"phase"`
	Ready       *bool    `json:"ready"`
	Deleting    bool     `json:"deleting"`
	Concurrency *float64 `json:"concurrency"`
	RPS         *float64 `json:"rps"`
	CPU         *float64 `json:"cpu"`
	Memory      *float64 `json:"memory"`
	// What a live platform records (see decider.PodSample): the start and
	// Ready-transition times in seconds from t = 0 (negative: before it).
	Started    *float64       `json:"started"`
	ReadySince *float64       `json:"readySince"`
	Containers []rawContainer `json:"containers"`
}

// rawContainer is one entry of samples[].pods[].containers.
type rawContainer struct {
	Name          string   `json:"name"`
	CPU           *float64 `json:"cpu"`
	Memory        *float64 `json:"memory"`
	CPURequest    float64  `json:"cpuRequest"`
	MemoryRequest float64  `json:"memoryRequest"`
}

// takePods validates samples[i].pods and stores them. A sample with pods
// but neither concurrency nor rps gets the revision-wide totals from its
// pods (the sums of their values); one with pods but no ready gets the
// number of pods that are Running, Ready and not deleting.
func (s *Sample) takePods(i int, raw []rawPod) []error {
	if len(raw) > maxPods {
		return []error{fmt.Errorf("samples[%d].pods: %d pods, more than %d", i, len(raw), maxPods)}
	}
	var errs []error
	s.Pods = make([]decider.PodSample, len(raw))
	seen := make(map[string]int, len(raw))
	for j, r := range raw {
		at := fmt.Sprintf("samples[%d].pods[%d]", i, j)
		errs = append(errs, checkPod(at, r, seen, j)...)
		p := decider.PodSample{Name: r.Name, Phase: r.Phase, Ready: r.Ready == nil || *r.Ready, Deleting: r.Deleting,
			Concurrency: r.Concurrency, RPS: r.RPS, CPU: r.CPU, Memory: r.Memory, Started: atSecond(r.Started), ReadySince: atSecond(r.ReadySince)}
		if r.Containers != nil {
			p.Containers = make([]decider.ContainerSample, len(r.Containers))
			if len(r.Containers) > maxContainers {
				errs = append(errs, fmt.Errorf("%s.containers: %d containers, more than %d", at, len(r.Containers), maxContainers))
				return errs
			}
			for k, c := range r.Containers {
				p.Containers[k] = decider.ContainerSample{Name: c.Name, CPU: c.CPU, Memory: c.Memory,
					CPURequest: c.CPURequest, MemoryRequest: c.MemoryRequest}
			}
		}
		s.Pods[j] = p
	}
	if !s.HasMetric {
		s.totalsFromPods()
	}
	if s.Ready == nil {
		ready := int32(0)
		for _, p := range s.Pods {
			if p.Ready && (p.Phase == "" || p.Phase == "Running") && !p.Deleting {
				ready++
			}
		}
		s.Ready = &ready
	}
	return errs
}

func checkPod(at string, r rawPod, seen map[string]int, j int) []error {
	var errs []error
	switch first, dup := seen[r.Name]; {
	case r.Name == "":
		errs = append(errs, fmt.Errorf("%s: name is missing; give each pod a name, unique within the sample", at))
	case dup:
		errs = append(errs, fmt.Errorf("%s.name = %q: already used by pods[%d]; names are unique within a sample", at, r.Name, first))
	default:
		seen[r.Name] = j
	}
	switch r.Phase {
	case "", "Pending", "Running", "Succeeded", "Failed":
	default:
		errs = append(errs, fmt.Errorf("%s.phase = %q: must be Pending, Running, Succeeded or Failed (default Running)", at, r.Phase))
	}
	for _, v := range []struct {
		name string
		v    *float64
	}{{"concurrency", r.Concurrency}, {"rps", r.RPS}, {"cpu", r.CPU}, {"memory", r.Memory}} {
		if v.v != nil && (*v.v < 0 || math.IsInf(*v.v, 0)) {
			errs = append(errs, fmt.Errorf("%s.%s = %v: must be >= 0", at, v.name, *v.v))
		}
	}
	if len(r.Containers) > maxContainers {
		errs = append(errs, fmt.Errorf("%s.containers: %d containers, more than %d", at, len(r.Containers), maxContainers))
		return errs
	}
	for k, c := range r.Containers {
		for _, v := range []struct {
			name string
			v    *float64
		}{{"cpu", c.CPU}, {"memory", c.Memory}, {"cpuRequest", &c.CPURequest}, {"memoryRequest", &c.MemoryRequest}} {
			if v.v != nil && (*v.v < 0 || math.IsInf(*v.v, 0)) {
				errs = append(errs, fmt.Errorf("%s.containers[%d].%s = %v: must be >= 0", at, k, v.name, *v.v))
			}
		}
	}
	return errs
}

// atSecond is the time of a pod's timestamp in seconds from t = 0 (zero
// when not given, or not finite).
func atSecond(s *float64) time.Time {
	if s == nil || math.IsNaN(*s) || math.Abs(*s) > 1e9 {
		return time.Time{}
	}
	return Epoch.Add(time.Duration(*s * float64(time.Second)))
}

// totalsFromPods sets the revision-wide totals of a sample without them to
// the sums over its pods, when any pod has a concurrency or rps value.
func (s *Sample) totalsFromPods() {
	for _, p := range s.Pods {
		if p.Concurrency != nil {
			s.HasMetric = true
			s.Concurrency += *p.Concurrency
		}
		if p.RPS != nil {
			s.HasMetric = true
			s.RPS += *p.RPS
		}
	}
}
