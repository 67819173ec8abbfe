package autoscaler

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/config/hpa"
	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/scaling/scenario"
)

// statePlatform is a fakePlatform that also gives pod states.
type statePlatform struct {
	*fakePlatform
	mu     sync.Mutex
	states []PodState
}

func (p *statePlatform) PodStates(context.Context, RevisionKey) ([]PodState, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]PodState(nil), p.states...), nil
}

// cpuPod is a Running pod with one container "app" using cores of a 0.1
// core request.
func cpuPod(name string, ready bool, started time.Time, cores *float64) PodState {
	return PodState{Pod: Pod{Name: name, Started: started}, Phase: "Running", Ready: ready, ReadySince: started.Add(2 * time.Second),
		Containers: []decider.ContainerSample{{Name: "app", CPU: cores, CPURequest: 0.1}}}
}

// TestHPAPodStatesLive: through a PodStater the HPA class sees every pod
// with its state and cpu, scrapes nobody for a cpu-only revision, applies
// the cpu initialization period, and its recording replays to the same
// decisions.
func TestHPAPodStatesLive(t *testing.T) {
	dir := t.TempDir()
	as, r, fp, s := newTestAutoscaler(t, map[string]string{
		"autoscaling.knative.dev/class": config.ClassHPA, "autoscaling.knative.dev/metric": "cpu",
		"autoscaling.knative.dev/target": "50", "autoscaling.knative.dev/window": "6s"}, dir)
	s.fail = true // a cpu-only revision never scrapes: a failing scraper changes nothing
	sp := &statePlatform{fakePlatform: fp}
	r.deps.platform = sp
	var live []decider.Decision
	as.deps.onDecision = func(_ RevisionKey, x *decider.Decision, _ time.Time) { live = append(live, *x) }
	ctx := context.Background()
	old := time.Unix(t0, 0).Add(-time.Hour) // initialized long ago
	young := time.Unix(t0+14, 0)            // starts at t=14: initializing for 5 minutes
	for i := range 20 {
		busy := 0.2
		sp.mu.Lock()
		sp.states = []PodState{cpuPod("a", true, old, &busy), cpuPod("b", true, old, &busy)}
		if i >= 14 {
			// A new pod, Ready, with a hot sample: still initializing and
			// Ready less than a window ago, so it counts as unready.
			sp.states = append(sp.states, cpuPod("c", true, young, &busy))
		}
		sp.mu.Unlock()
		r.second(ctx, t0+int64(i))
	}
	r.closeRecording()
	if len(live) == 0 {
		t.Fatal("no decision")
	}
	// 200% of the request against 50% on 2 ready pods: 8, capped by the
	// legacy limit max(2×2, 4) = 4.
	first := live[0]
	if first.Recommended != 8 || first.Desired != 4 {
		t.Errorf("first decision %d/%d, want 8/4; reasons %v", first.Recommended, first.Desired, first.Reasons())
	}
	// Pod c, initializing and Ready for less than a window, is unready for
	// cpu: filled in at 0 on the scale-up (Kubernetes' rebalancing).
	last := live[len(live)-1]
	if !slices.ContainsFunc(last.Reasons(), func(r decider.Reason) bool { return r.Code == decider.PodsRebalanced && r.Values()[1] == 1 }) {
		t.Errorf("last decision %v: want PodsRebalanced with 1 unready pod", last.Reasons())
	}
	data, err := os.ReadFile(filepath.Join(dir, "default_hello-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"containers": [{"name": "app", "cpu": 0.2, "cpuRequest": 0.1, "memoryRequest": 0}]`) ||
		!strings.Contains(string(data), `"phase": "Running", "started": -3599, "readySince": -3597`) { // from t0-1, hello's tick origin
		t.Errorf("recording lacks the pod states and containers:\n%.600s", data)
	}
	scn, rev := parseRecording(t, data)
	var replayed []string
	if err := scenario.Replay(scn, rev, func(l scenario.Line) error {
		replayed = append(replayed, decisionKey(l.Decision))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, d := range live {
		want = append(want, decisionKey(d))
	}
	if diff := cmp.Diff(want, replayed); diff != "" {
		t.Errorf("decisions (-live +replay):\n%s", diff)
	}
}

// decisionKey is a decision's reasons and desired count (live and replayed
// clocks differ: the time is left out; the order tells it).
func decisionKey(d decider.Decision) string {
	var b strings.Builder
	for _, r := range d.Reasons() {
		b.WriteString(" " + string(r.Code) + ":" + r.Detail)
	}
	return b.String() + " " + strings.TrimSpace(strings.Repeat("|", int(d.Desired)))
}

func TestHPARescaleEventAndConditions(t *testing.T) {
	rev, err := config.NewRevision(config.Defaults(), map[string]string{"autoscaling.knative.dev/class": config.ClassHPA,
		"autoscaling.knative.dev/metric": "cpu", "autoscaling.knative.dev/target": "50"}, hpa.DocumentParser{})
	if err != nil {
		t.Fatal(err)
	}
	rev.HPACPUInitializationPeriod = 0
	st := decider.NewStepper(rev, decider.StepperOptions{First: time.Unix(t0, 0), Ready: 2})
	hot := 200.0
	two := int32(2)
	dec, ok := st.Step(time.Unix(t0, 0), decider.Second{Ready: &two, Pods: []decider.PodSample{
		{Name: "a", Ready: true, CPU: &hot}, {Name: "b", Ready: true, CPU: &hot}}})
	if !ok || dec.Desired != 4 {
		t.Fatalf("decision %v %+v: want 4 (8 capped by the legacy limit)", ok, dec)
	}
	if got := hpaRescale(&dec, "x"); got.Code != "SuccessfulRescale" || got.Message != "New size: 4; reason: cpu above target (x)" {
		t.Errorf("rescale event %+v", got)
	}
	h := newHistory(4)
	h.add(&dec, 2)
	v, _ := h.latest()
	want := []string{"AbleToScale True ReadyForNewScale", "ScalingActive True ValidMetricFound", "ScalingLimited True ScaleUpLimit"}
	var got []string
	for _, c := range v.Conditions {
		got = append(got, c.Type+" "+c.Status+" "+c.Reason)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the decision view's conditions (-want +got):\n%s", diff)
	}
}

// TestHPAMetricWarning: an HPA-class decision whose only metric cannot be
// read gives Kubernetes' Warning (ScalingActive False), sent at once, not
// again within warnInterval unless it changes, and at once again after the
// metric recovered and failed anew.
func TestHPAMetricWarning(t *testing.T) {
	rev, err := config.NewRevision(config.Defaults(), map[string]string{"autoscaling.knative.dev/class": config.ClassHPA,
		"autoscaling.knative.dev/metric": "cpu", "autoscaling.knative.dev/target": "50"}, hpa.DocumentParser{})
	if err != nil {
		t.Fatal(err)
	}
	rev.HPACPUInitializationPeriod = 0 // cpu samples count at once
	st := decider.NewStepper(rev, decider.StepperOptions{First: time.Unix(t0, 0), Ready: 2})
	two := int32(2)
	dec, ok := st.Step(time.Unix(t0, 0), decider.Second{Ready: &two, Pods: []decider.PodSample{
		{Name: "a", Ready: true}, {Name: "b", Ready: true}}}) // no cpu sample at all
	if !ok {
		t.Fatal("no decision")
	}
	reason, message, failing := metricWarning(&dec)
	if !failing || reason != "FailedGetResourceMetric" || message == "" {
		t.Fatalf("metricWarning = %q, %q, %v; want FailedGetResourceMetric with a message", reason, message, failing)
	}
	var w warnings
	at := func(s int) time.Time { return time.Unix(t0+int64(s), 0) }
	steps := []struct {
		reason, message string
		failing         bool
		at              int
		want            bool
	}{
		{reason, message, true, 0, true},
		{reason, message, true, 30, false}, // a repeat within the interval
		{reason, message, true, 60, true},  // a repeat after it
		{reason, "another message", true, 61, true},
		{"", "", false, 62, false},        // the metric works again
		{reason, message, true, 63, true}, // and fails anew: at once
	}
	for i, s := range steps {
		if got := w.due(s.reason, s.message, s.failing, at(s.at)); got != s.want {
			t.Errorf("step %d (%+v): due = %v, want %v", i, s, got, s.want)
		}
	}
	cool := 20.0
	var healthy decider.Decision
	for s := int64(1); !ok || s == 1; s++ { // until the next tick decides
		healthy, ok = st.Step(time.Unix(t0+s, 0), decider.Second{Ready: &two, Pods: []decider.PodSample{
			{Name: "a", Ready: true, CPU: &cool}, {Name: "b", Ready: true, CPU: &cool}}})
		if s > 10 {
			t.Fatal("no decision in 10 seconds")
		}
	}
	if _, _, failing := metricWarning(&healthy); failing {
		t.Errorf("a decision with cpu samples warns: %v", healthy.Reasons())
	}
}
