package scenario

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/config/hpa"
)

func ptr[T any](v T) *T { return &v }

func TestParse(t *testing.T) {
	in := `{"description": "d", "config": {"stable-window": "60s", "max-scale-up-rate": 10, "enable-scale-to-zero": true},
		"annotations": {"autoscaling.knative.dev/target": "10"}, "containerConcurrency": 4,
		"samples": [{"t": 0, "concurrency": 1.5, "ready": 1}, {"t": 1, "rps": 3}, {"t": 3, "reachable": false}]}`
	got, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := &Scenario{
		Description:          "d",
		Config:               map[string]string{"stable-window": "60s", "max-scale-up-rate": "10", "enable-scale-to-zero": "true"},
		Annotations:          map[string]string{"autoscaling.knative.dev/target": "10"},
		ContainerConcurrency: 4,
		Samples: []Sample{
			{T: 0, HasMetric: true, Concurrency: 1.5, Ready: ptr(int32(1))},
			{T: 1, HasMetric: true, RPS: 3},
			{T: 3, Reachable: ptr(false)},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{name: "not JSON", in: `{`, want: []string{"reading scenario"}},
		{name: "two documents", in: `{"samples": [{"t": 0}]} {}`, want: []string{"more than one JSON document"}},
		{name: "no samples", in: `{}`, want: []string{"samples: none given"}},
		{name: "missing t", in: `{"samples": [{"concurrency": 1}]}`, want: []string{"samples[0]: t is missing"}},
		{name: "t not increasing", in: `{"samples": [{"t": 2}, {"t": 2}]}`, want: []string{"samples[1].t = 2: must be greater than the previous sample's t (2)"}},
		{name: "t fractional", in: `{"samples": [{"t": 0.5}]}`, want: []string{"samples[0].t = 0.5: must be a whole number"}},
		{name: "t too large", in: `{"samples": [{"t": 99999999999}]}`, want: []string{"must be within [0, 31536000]"}},
		{name: "negative metric", in: `{"samples": [{"t": 0, "rps": -2}]}`, want: []string{"samples[0].rps = -2: must be >= 0"}},
		{name: "negative ready", in: `{"samples": [{"t": 0, "ready": -1}]}`, want: []string{"samples[0].ready = -1"}},
		{name: "config value not a string", in: `{"config": {"stable-window": ["60s"]}, "samples": [{"t": 0}]}`,
			want: []string{`config "stable-window" = ["60s"]: must be a string`}},
		{name: "containerConcurrency out of range", in: `{"containerConcurrency": 1001, "samples": [{"t": 0}]}`,
			want: []string{"containerConcurrency = 1001: must be within [0, 1000]"}},
		{name: "all problems at once", in: `{"samples": [{"t": 1}, {"t": 0, "concurrency": -1}]}`,
			want: []string{"samples[1].t = 0", "samples[1].concurrency = -1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestRevisionContainerConcurrency(t *testing.T) {
	s := &Scenario{ContainerConcurrency: 10, Annotations: map[string]string{config.AnnotationContainerConcurrency: "5"}, Samples: []Sample{{}}}
	if _, err := s.Revision(hpa.DocumentParser{}); err == nil || !strings.Contains(err.Error(), "give the hard limit once") {
		t.Errorf("conflicting hard limits: err = %v", err)
	}
	s.Annotations[config.AnnotationContainerConcurrency] = "10"
	rev, err := s.Revision(hpa.DocumentParser{})
	if err != nil {
		t.Fatal(err)
	}
	if rev.ContainerConcurrency != 10 || rev.Total != 10 {
		t.Errorf("ContainerConcurrency %d, Total %v; want 10, 10", rev.ContainerConcurrency, rev.Total)
	}
}

func TestReplayTicksAndPokes(t *testing.T) {
	s, err := Parse([]byte(`{"config": {"tick-interval": "4s"}, "samples": [{"t": 1, "concurrency": 0, "ready": 1}, {"t": 9, "concurrency": 0}]}`))
	if err != nil {
		t.Fatal(err)
	}
	rev, err := s.Revision(hpa.DocumentParser{})
	if err != nil {
		t.Fatal(err)
	}
	var ts []int64
	if err := Replay(s, rev, func(l Line) error { ts = append(ts, l.T); return nil }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{4, 8}, ts); diff != "" {
		t.Errorf("decision times (-want +got):\n%s", diff)
	}
}

// TestReplayStartInactive: "startInactive" starts the revision inactive at
// zero (as the autoscaler restarts the decider of a revision at zero): no
// traffic keeps it there, where the defined start activates it at its
// initial scale; a request then wakes it.
func TestReplayStartInactive(t *testing.T) {
	for _, inactive := range []bool{false, true} {
		doc := fmt.Sprintf(`{"startInactive": %v, "samples": [{"t": 0, "ready": 0}, {"t": 6, "concurrency": 0}, {"t": 7, "concurrency": 3}]}`, inactive)
		s, err := Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		rev, err := s.Revision(hpa.DocumentParser{})
		if err != nil {
			t.Fatal(err)
		}
		var desired []int32
		if err := Replay(s, rev, func(l Line) error { desired = append(desired, l.Decision.Desired); return nil }); err != nil {
			t.Fatal(err)
		}
		want := []int32{1, 1, 1, 1, 1} // t = 0, 2, 4, 6 and the poke at 7
		if inactive {
			want = []int32{0, 0, 0, 0, 1}
		}
		if diff := cmp.Diff(want, desired); diff != "" {
			t.Errorf("startInactive %v: desired (-want +got):\n%s", inactive, diff)
		}
	}
}

// FuzzParse: Parse never panics, and an accepted scenario replays without
// error and with one line per tick at most.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"samples": [{"t": 0, "concurrency": 10, "ready": 1}, {"t": 2, "rps": 5}]}`))
	f.Add(
		[]byte(`{"config": {"target-burst-capacity": "-1"}, "annotations": {"autoscaling.knative.dev/min-scale": "2"}, "samples": [{"t": 3, "reachable": false}]}`),
	)
	f.Add([]byte(`{"containerConcurrency": 3, "samples": [{"t": 0}, {"t": 40, "concurrency": 1}]}`))
	f.Add([]byte(`{"annotations": {"autoscaling.knative.dev/class": "hpa.autoscaling.knative.dev", "autoscaling.knative.dev/metric": "rps"},
		"samples": [{"t": 0, "pods": [{"name": "a", "rps": 300}, {"name": "b", "phase": "Pending"}]}, {"t": 4, "rps": 10, "ready": 2}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		if last := s.Samples[len(s.Samples)-1].T; last > 5000 {
			return // long replays are fine but slow the fuzzer down
		}
		rev, err := s.Revision(hpa.DocumentParser{})
		if err != nil {
			return
		}
		n := 0
		err = Replay(s, rev, func(l Line) error {
			n++
			if l.Decision.Desired < 0 {
				return fmt.Errorf("negative desired at %d", l.T)
			}
			return nil
		})
		// Other classes are refused.
		supported := rev.Class == "kpa.autoscaling.knative.dev" || rev.Class == "hpa.autoscaling.knative.dev"
		if err != nil && supported {
			t.Fatal(err)
		}
	})
}

// BenchmarkReplayHour replays an hour of per-second samples (1800 decisions).
func BenchmarkReplayHour(b *testing.B) {
	s := &Scenario{Samples: make([]Sample, 3600)}
	for i := range s.Samples {
		ready := int32(1 + i/600)
		s.Samples[i] = Sample{T: int64(i), HasMetric: true, Concurrency: float64(50 + (i*37)%300), RPS: 100, Ready: &ready}
	}
	rev, err := s.Revision(hpa.DocumentParser{})
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	b.ReportAllocs()
	for range b.N {
		err := Replay(s, rev, func(l Line) error {
			buf = AppendJSON(buf[:0], l, false)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
