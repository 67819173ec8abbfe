package hpa

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"ebb.dev/ebb/pkg/behavior"
)

// byteReader turns fuzz bytes into bounded numbers; past the end it reads 0.
type byteReader struct{ b []byte }

func (r *byteReader) u8() uint8 {
	if len(r.b) == 0 {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *byteReader) u16() uint16 { return uint16(r.u8())<<8 | uint16(r.u8()) }

// genInput builds a BehaviorInput with 0 <= Min <= Max, Max >= 1, a valid
// behavior (or nil, or {}), and a random history around t0.
func genInput(r *byteReader) BehaviorInput {
	minR := int32(r.u8() % 20)
	in := BehaviorInput{Now: t0, Min: minR, Max: max(1, minR+int32(r.u8()%60))}
	in.Current = int32(r.u8() % 90)
	in.Desired = int32(r.u16() % 2000)
	switch r.u8() % 3 {
	case 1:
		in.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	case 2:
		in.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: genRules(r), ScaleDown: genRules(r)}
	}
	for range r.u8() % 30 {
		in.Recommendations = append(in.Recommendations, Recommendation{ago(genAge(r, 4000)), int32(r.u16() % 2000)})
	}
	for range r.u8() % 10 {
		in.ScaleUps = append(in.ScaleUps, ScaleEvent{ago(genAge(r, 2000)), 1 + int32(r.u8()%50)})
	}
	for range r.u8() % 10 {
		in.ScaleDowns = append(in.ScaleDowns, ScaleEvent{ago(genAge(r, 2000)), 1 + int32(r.u8()%50)})
	}
	return in
}

// genAge is up to maxSeconds, on whole seconds more often than not, so that
// ages equal to windows and periods come up.
func genAge(r *byteReader, maxSeconds uint16) time.Duration {
	age := time.Duration(r.u16()%maxSeconds) * time.Second
	if f := r.u8(); f >= 200 {
		age += time.Duration(f-200) * 17 * time.Millisecond
	}
	return age
}

// genRules makes valid scaling rules, or nil (the defaults).
func genRules(r *byteReader) *autoscalingv2.HPAScalingRules {
	if r.u8()%4 == 0 {
		return nil
	}
	rules := &autoscalingv2.HPAScalingRules{}
	if w := r.u16() % 3700; w <= uint16(MaxStabilizationWindowSeconds) {
		rules.StabilizationWindowSeconds = ptr(int32(w))
	}
	switch r.u8() % 4 {
	case 1:
		rules.SelectPolicy = ptr(autoscalingv2.MaxChangePolicySelect)
	case 2:
		rules.SelectPolicy = ptr(autoscalingv2.MinChangePolicySelect)
	case 3:
		rules.SelectPolicy = ptr(autoscalingv2.DisabledPolicySelect)
	}
	for range r.u8() % 4 { // 0 policies: nil, so the defaults
		typ := autoscalingv2.PodsScalingPolicy
		if r.u8()%2 == 1 {
			typ = autoscalingv2.PercentScalingPolicy
		}
		rules.Policies = append(rules.Policies, autoscalingv2.HPAScalingPolicy{
			Type: typ, Value: 1 + int32(r.u16()%2000), PeriodSeconds: 1 + int32(r.u16()%uint16(MaxPeriodSeconds)),
		})
	}
	return rules
}

// TestNormalizeBehaviorProperties runs the fuzz invariants on a fixed
// pseudo-random sample, so that plain `go test` checks them too.
func TestNormalizeBehaviorProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 10000 {
		data := make([]byte, 8+rng.IntN(120))
		for j := range data {
			data[j] = byte(rng.UintN(256))
		}
		in := genInput(&byteReader{data})
		if err := ValidateBehavior(DefaultBehavior(in.Behavior)); err != nil {
			t.Fatalf("sample %d: the generator made an invalid behavior: %v", i, err)
		}
		checkNormalize(t, in)
	}
}

// FuzzReplicasForPods: no panic, a count in [0, MaxInt32], current on error,
// and current whenever the first usage ratio is inside the tolerance band.
func FuzzReplicasForPods(f *testing.F) {
	f.Add(int32(3), []byte{1, 20, 1, 10, 1, 30}, 15.0, 0.1, 0.1)
	f.Add(int32(4), []byte{1, 40, 0, 0, 2, 0, 1, 40}, 20.0, 0.0, 0.36)
	f.Add(int32(0), []byte{}, 0.0, 0.1, 0.1)
	f.Fuzz(func(t *testing.T, current int32, podBytes []byte, target, up, down float64) {
		if current < 0 {
			current = -current / 2
		}
		pods := genPods(&byteReader{podBytes})
		// Kubernetes validates tolerance >= 0: the band always contains 1.
		tol := Tolerance{ScaleUp: validTolerance(up), ScaleDown: validTolerance(down)}
		replicas, usage, err := PodsReplicas(current, pods, target, tol)
		if err != nil {
			if replicas != current {
				t.Fatalf("error %v with replicas %d, want current %d", err, replicas, current)
			}
			return
		}
		if replicas < 0 {
			t.Fatalf("negative replicas %d", replicas)
		}
		targetMilli, _ := behavior.ToMilli(target)
		ratio := math.Round(usage*1000) / float64(targetMilli)
		if tol.Within(ratio) && replicas != current {
			t.Fatalf("ratio %v within %+v but replicas %d != current %d", ratio, tol, replicas, current)
		}
		if r, u := ReplicasForPods(current, pods, target, tol); r != replicas || u != usage {
			t.Fatalf("ReplicasForPods = %d, %v; PodsReplicas = %d, %v", r, u, replicas, usage)
		}
	})
}

func validTolerance(v float64) float64 {
	if math.IsNaN(v) {
		return DefaultTolerance
	}
	return math.Abs(v)
}

// genPods reads pods as (kind, value) pairs: kind picks the phase and
// whether a sample is there.
func genPods(r *byteReader) []PodMetric {
	var pods []PodMetric
	for len(r.b) > 0 && len(pods) < 64 {
		kind, v := r.u8(), float64(r.u8())/4
		p := PodMetric{Phase: PhaseRunning, Ready: kind%2 == 0, Value: f64(v)}
		switch kind % 8 {
		case 0:
			p.Value = nil
		case 1:
			p.Phase = PhasePending
		case 2:
			p.Phase = PhaseFailed
		case 3:
			p.Deleting = true
		}
		pods = append(pods, p)
	}
	return pods
}
