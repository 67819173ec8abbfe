package activator

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/fielderr"
)

func TestResolve(t *testing.T) {
	tests := []struct {
		policy LoadBalancing
		cc     int
		want   LoadBalancing
	}{
		{LBAuto, 0, lbPowerOfTwo},
		{LBAuto, 1, lbFirstAvailable},
		{LBAuto, 3, lbFirstAvailable},
		{LBAuto, 4, LBRoundRobin},
		{LBAuto, 100, LBRoundRobin},
		{LBRoundRobin, 0, LBRoundRobin},
		{lbPowerOfTwo, 2, lbPowerOfTwo},
		{lbFirstAvailable, 50, lbFirstAvailable},
	}
	for _, tt := range tests {
		if got := tt.policy.resolve(tt.cc); got != tt.want {
			t.Errorf("%v.resolve(%d) = %v, want %v", tt.policy, tt.cc, got, tt.want)
		}
	}
}

func TestParseLoadBalancing(t *testing.T) {
	for _, p := range []LoadBalancing{LBAuto, lbPowerOfTwo, lbFirstAvailable, LBRoundRobin} {
		got, err := ParseLoadBalancing(p.String())
		if err != nil || got != p {
			t.Errorf("ParseLoadBalancing(%q) = %v, %v; want %v", p.String(), got, err, p)
		}
	}
	if got, err := ParseLoadBalancing(""); err != nil || got != LBAuto {
		t.Errorf(`ParseLoadBalancing("") = %v, %v; want auto`, got, err)
	}
	for _, name := range config.LoadBalancingPolicies {
		if got, err := ParseLoadBalancing(name); err != nil || got.String() != name {
			t.Errorf("ParseLoadBalancing(%q) = %v, %v; want the policy of that name", name, got, err)
		}
	}
	_, err := ParseLoadBalancing("random")
	if fe := fielderr.Errors(err); len(fe) != 1 || fe[0].Key != config.AnnotationLoadBalancing || fe[0].Value != "random" {
		t.Errorf(`ParseLoadBalancing("random") = %v; want one fielderr.Error naming the annotation and the value`, err)
	}
}

// takes picks n times without releasing and returns the addresses ("-"
// for no slot).
func takes(s *replicaSet, n int) []string {
	var rr cursor
	var got []string
	for range n {
		if r := s.pick(&rr); r != nil {
			got = append(got, r.addr)
		} else {
			got = append(got, "-")
		}
	}
	return got
}

func TestPickFirstAvailable(t *testing.T) {
	s := replicas(2, "a", "b", "c")
	s.policy = lbFirstAvailable
	want := []string{"a", "a", "b", "b", "c", "c", "-"}
	if diff := cmp.Diff(want, takes(s, 7)); diff != "" {
		t.Errorf("picks (-want +got):\n%s", diff)
	}
	s.replicas[1].release() // b frees a slot: the scan finds it first
	if diff := cmp.Diff([]string{"b", "-"}, takes(s, 2)); diff != "" {
		t.Errorf("picks after a release (-want +got):\n%s", diff)
	}
}

func TestPickRoundRobin(t *testing.T) {
	s := replicas(2, "a", "b", "c")
	s.policy = LBRoundRobin
	want := []string{"a", "b", "c", "a", "b", "c", "-"}
	if diff := cmp.Diff(want, takes(s, 7)); diff != "" {
		t.Errorf("picks (-want +got):\n%s", diff)
	}
	// A full replica is skipped: with a full, the rotation goes on past it.
	s = replicas(1, "a", "b", "c")
	s.policy = LBRoundRobin
	s.replicas[0].tryTake()
	if diff := cmp.Diff([]string{"b", "c", "-"}, takes(s, 3)); diff != "" {
		t.Errorf("picks with a full replica (-want +got):\n%s", diff)
	}
}

// TestPickPowerOfTwo: with unlimited capacity the load spreads evenly: no
// replica ends more than a couple of requests away from the mean, since
// each pick takes the less loaded of two.
func TestPickPowerOfTwo(t *testing.T) {
	s := replicas(0, "a", "b", "c", "d")
	s.policy = lbPowerOfTwo
	takes(s, 4000)
	for _, r := range s.replicas {
		if n := r.inFlight.Load(); n < 990 || n > 1010 {
			t.Errorf("replica %s has %d in flight, want about 1000", r.addr, n)
		}
	}
}

// TestPickPowerOfTwoRespectsCapacity: forced on a limited revision, the
// policy never exceeds capacity and still finds the last free slot.
func TestPickPowerOfTwoRespectsCapacity(t *testing.T) {
	s := replicas(1, "a", "b", "c")
	s.policy = lbPowerOfTwo
	got := takes(s, 4)
	if got[3] != "-" {
		t.Errorf("fourth pick = %q, want none", got[3])
	}
	for _, r := range s.replicas {
		if r.inFlight.Load() != 1 {
			t.Errorf("replica %s in flight = %d, want 1", r.addr, r.inFlight.Load())
		}
	}
}

func TestShare(t *testing.T) {
	tests := []struct {
		cc, n int
		want  int64
	}{{0, 3, 0}, {10, 1, 10}, {10, 0, 10}, {10, 3, 4}, {2, 3, 1}, {1, 5, 1}, {100, 4, 25}}
	for _, tt := range tests {
		if got := share(tt.cc, tt.n); got != tt.want {
			t.Errorf("share(%d, %d) = %d, want %d", tt.cc, tt.n, got, tt.want)
		}
	}
}
