package activator

import (
	"net"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// setView is what a revision's published replica set looks like.
type setView struct {
	Policy   string
	Replicas []string // address=capacity
}

func viewOf(a *Activator, key string) setView {
	rev := a.routes.Load().byKey[key]
	if rev == nil {
		return setView{Policy: "absent"}
	}
	s := rev.throttle.set.Load()
	v := setView{Policy: s.policy.String()}
	for _, r := range s.replicas {
		v.Replicas = append(v.Replicas, r.addr+"="+strconv.FormatInt(r.capacity.Load(), 10))
	}
	return v
}

// TestApply follows the platform through updates: ready replicas join at
// once (sorted, with this activator's share), unready ones wait for their
// probe, settings changes re-share, removed replicas and revisions go.
func TestApply(t *testing.T) {
	a, err := New(withDefaults(Options{Listener: &net.TCPListener{}, Platform: newFakePlatform()}))
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		revs []Revision
		want map[string]setView
	}{
		{name: "two ready, one not, cc 4 over 2 activators",
			revs: []Revision{withActivators(rev("a", 4, Replica{Address: "r2:1", Ready: true}, Replica{Address: "r1:1", Ready: true}, Replica{Address: "r3:1"}), 2)},
			want: map[string]setView{"default/a": {Policy: "round-robin", Replicas: []string{"r1:1=2", "r2:1=2"}}}},
		{name: "cc 3 alone: first available, full capacity",
			revs: []Revision{rev("a", 3, Replica{Address: "r2:1", Ready: true}, Replica{Address: "r1:1", Ready: true}, Replica{Address: "r3:1"})},
			want: map[string]setView{"default/a": {Policy: "first-available", Replicas: []string{"r1:1=3", "r2:1=3"}}}},
		{name: "r1 gone, annotation forces power of two, unlimited",
			revs: []Revision{withLB(rev("a", 0, Replica{Address: "r2:1", Ready: true}), lbPowerOfTwo), rev("b", 1)},
			want: map[string]setView{"default/a": {Policy: "power-of-two-choices", Replicas: []string{"r2:1=0"}},
				"default/b": {Policy: "first-available"}}},
		{name: "a removed",
			revs: []Revision{rev("b", 1)},
			want: map[string]setView{"default/a": {Policy: "absent"}, "default/b": {Policy: "first-available"}}},
	}
	for _, st := range steps {
		a.apply(st.revs)
		for key, want := range st.want {
			if diff := cmp.Diff(want, viewOf(a, key)); diff != "" {
				t.Errorf("%s: %s (-want +got):\n%s", st.name, key, diff)
			}
		}
	}
}

func withActivators(r Revision, n int) Revision { r.Activators = n; return r }

func withLB(r Revision, p LoadBalancing) Revision { r.LoadBalancing = p; return r }

func TestApplyIgnoresInvalid(t *testing.T) {
	a, err := New(withDefaults(Options{Listener: &net.TCPListener{}, Platform: newFakePlatform()}))
	if err != nil {
		t.Fatal(err)
	}
	bad := rev("Bad_Name", 0)
	noTimeout := rev("ok", 0)
	noTimeout.Timeout = 0
	a.apply([]Revision{bad, noTimeout, rev("good", 0), rev("good", 1)})
	if got := len(a.routes.Load().byKey); got != 1 {
		t.Errorf("%d revisions in the table, want only default/good", got)
	}
	if cc := a.routes.Load().byKey["default/good"].cfg.Load().cc; cc != 0 {
		t.Errorf("the duplicate overrode the first: cc %d", cc)
	}
}
