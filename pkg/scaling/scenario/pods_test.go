package scenario

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config/hpa"
	"ebb.dev/ebb/pkg/scaling/decider"
)

func TestParsePods(t *testing.T) {
	in := `{"samples": [
		{"t": 0, "pods": [{"name": "a", "concurrency": 3, "rps": 10, "cpu": 55}, {"name": "b", "ready": false, "concurrency": 1},
		                  {"name": "c", "phase": "Pending"}, {"name": "d", "deleting": true, "memory": 40}]},
		{"t": 1, "concurrency": 7, "pods": [{"name": "a", "concurrency": 3}], "ready": 4},
		{"t": 2, "pods": [{"name": "a"}]}]}`
	got, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Sample{
		// Totals from the pods (3+1 in flight, 10 rps); ready: a only.
		{T: 0, HasMetric: true, Concurrency: 4, RPS: 10, Ready: ptr(int32(1)), Pods: []decider.PodSample{
			{Name: "a", Ready: true, Concurrency: ptr(3.0), RPS: ptr(10.0), CPU: ptr(55.0)},
			{Name: "b", Concurrency: ptr(1.0)},
			{Name: "c", Phase: "Pending", Ready: true},
			{Name: "d", Ready: true, Deleting: true, Memory: ptr(40.0)},
		}},
		// Given totals and ready win.
		{T: 1, HasMetric: true, Concurrency: 7, Ready: ptr(int32(4)), Pods: []decider.PodSample{{Name: "a", Ready: true, Concurrency: ptr(3.0)}}},
		// Pods without values: no metric that second, but the list counts.
		{T: 2, Ready: ptr(int32(1)), Pods: []decider.PodSample{{Name: "a", Ready: true}}},
	}
	if diff := cmp.Diff(want, got.Samples); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
}

func TestParsePodsErrors(t *testing.T) {
	in := `{"samples": [{"t": 0, "pods": [{"concurrency": 1}, {"name": "a", "phase": "Runing", "cpu": -1}, {"name": "a"}]}]}`
	_, err := Parse([]byte(in))
	for _, w := range []string{
		"samples[0].pods[0]: name is missing",
		`samples[0].pods[1].phase = "Runing": must be Pending, Running, Succeeded or Failed`,
		"samples[0].pods[1].cpu = -1: must be >= 0",
		`samples[0].pods[2].name = "a": already used by pods[1]`,
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
}

// FuzzParsePods: the parser never panics; what it accepts has strictly
// increasing seconds within bounds, non-negative metrics, and pods with
// unique names whose totals feed the revision-wide metric.
func FuzzParsePods(f *testing.F) {
	for _, s := range []string{
		`{"samples": [{"t": 0, "concurrency": 1, "ready": 1}]}`,
		`{"samples": [{"t": 0, "pods": [{"name": "a", "concurrency": 2, "cpu": 50}, {"name": "b", "phase": "Pending"}]}, {"t": 3, "pods": []}]}`,
		`{"annotations": {"autoscaling.ebb.dev/behavior": "{}"}, "samples": [{"t": 1, "rps": 2, "pods": [{"name": "x", "ready": false}]}]}`,
		`{"samples": [{"t": 0, "pods": [{"name": ""}]}]}`, `{"samples": [{"t": 0, "pods": null}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		prev := int64(-1)
		for i, smp := range s.Samples {
			if smp.T <= prev || smp.T > maxSeconds || smp.Concurrency < 0 || smp.RPS < 0 {
				t.Fatalf("sample %d accepted out of bounds: %+v", i, smp)
			}
			prev = smp.T
			names := map[string]bool{}
			for _, p := range smp.Pods {
				if p.Name == "" || names[p.Name] {
					t.Fatalf("sample %d: pod name %q empty or repeated", i, p.Name)
				}
				names[p.Name] = true
				for _, v := range []*float64{p.Concurrency, p.RPS, p.CPU, p.Memory} {
					if v != nil && *v < 0 {
						t.Fatalf("sample %d: negative pod value %v", i, *v)
					}
				}
			}
			if smp.Pods != nil && smp.Ready == nil {
				t.Fatalf("sample %d has pods but no ready count", i)
			}
		}
	})
}

// TestRevisionParsesBehavior: Revision returns a complete revision, its
// behavior parsed; without a parser the behavior is refused, never
// silently ignored.
func TestRevisionParsesBehavior(t *testing.T) {
	s, err := Parse([]byte(`{"annotations": {"autoscaling.ebb.dev/behavior": "{}"}, "samples": [{"t": 0, "concurrency": 1, "ready": 1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if rev, err := s.Revision(nil); err == nil {
		t.Errorf("Revision(nil) = %+v, want an error for the behavior annotation", rev)
	}
	rev, err := s.Revision(hpa.DocumentParser{})
	if err != nil || rev.Behavior == nil {
		t.Fatalf("Revision = %+v, %v; want the behavior parsed", rev, err)
	}
	if err := Replay(s, rev, func(Line) error { return nil }); err != nil {
		t.Errorf("Replay = %v", err)
	}
}
