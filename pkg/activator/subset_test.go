package activator

import (
	"fmt"
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSubset(t *testing.T) {
	tests := []struct {
		n, cc, k, index int
		want            string // first,last,extra,capacity
	}{
		{n: 4, cc: 10, k: 1, index: 1, want: "0,4,-1,10"},  // alone: everything
		{n: 4, cc: 10, k: 2, index: 0, want: "0,4,-1,5"},   // position unknown: share everything
		{n: 4, cc: 0, k: 2, index: 1, want: "0,4,-1,0"},    // unlimited: everything
		{n: 0, cc: 10, k: 2, index: 1, want: "0,0,-1,5"},   // nothing to split
		{n: 4, cc: 10, k: 2, index: 1, want: "0,2,-1,10"},  // even split
		{n: 4, cc: 10, k: 2, index: 2, want: "2,4,-1,10"},  //
		{n: 20, cc: 5, k: 3, index: 1, want: "0,6,18,5"},   // Knative's example: 2 remnants to activators 1 and 2
		{n: 20, cc: 5, k: 3, index: 2, want: "6,12,19,5"},  //
		{n: 20, cc: 5, k: 3, index: 3, want: "12,18,-1,5"}, //
		{n: 2, cc: 10, k: 5, index: 1, want: "0,1,-1,4"},   // more activators than replicas: 3 share replica 0
		{n: 2, cc: 10, k: 5, index: 2, want: "1,2,-1,5"},   // 2 share replica 1
		{n: 2, cc: 10, k: 5, index: 5, want: "0,1,-1,4"},   //
		{n: 1, cc: 1, k: 3, index: 2, want: "0,1,-1,1"},    // at least one slot each
		{n: 4, cc: 10, k: 2, index: 3, want: "0,4,-1,5"},   // a position out of range counts as unknown
	}
	for _, tt := range tests {
		f, l, e, c := subset(tt.n, tt.cc, tt.k, tt.index)
		if got := fmt.Sprintf("%d,%d,%d,%d", f, l, e, c); got != tt.want {
			t.Errorf("subset(n %d, cc %d, k %d, index %d) = %s, want %s", tt.n, tt.cc, tt.k, tt.index, got, tt.want)
		}
	}
}

// TestSubsetCoversEveryReplica: with known positions every replica gets
// traffic from some activator, and the activators together never hold
// more than cc slots of a replica they split (they may exceed it by the
// rounding of a shared replica, at most one slot per sharer).
func TestSubsetCoversEveryReplica(t *testing.T) {
	for n := 1; n <= 12; n++ {
		for k := 1; k <= 12; k++ {
			for _, cc := range []int{1, 2, 3, 10} {
				slots := make([]int64, n)
				sharers := make([]int64, n)
				for index := 1; index <= k; index++ {
					f, l, e, c := subset(n, cc, k, index)
					mine := []int{}
					for i := f; i < l; i++ {
						mine = append(mine, i)
					}
					if e >= 0 {
						mine = append(mine, e)
					}
					if len(mine) == 0 {
						t.Fatalf("n %d k %d cc %d: activator %d has no replica", n, k, cc, index)
					}
					for _, i := range mine {
						slots[i] += c
						sharers[i]++
					}
				}
				for i := range n {
					if slots[i] < int64(cc) || slots[i] > int64(cc)+sharers[i]-1 {
						t.Errorf("n %d k %d cc %d: replica %d has %d slots over %d activators, want within [%d, %d]",
							n, k, cc, i, slots[i], sharers[i], cc, int64(cc)+sharers[i]-1)
					}
					if k <= n && sharers[i] != 1 {
						t.Errorf("n %d k %d cc %d: replica %d is used by %d activators, want exactly 1", n, k, cc, i, sharers[i])
					}
				}
			}
		}
	}
}

// TestApplySubsets: a known position makes the published set this
// activator's part of the replicas, with their whole capacity; replicas
// joining re-deal the parts.
func TestApplySubsets(t *testing.T) {
	a, err := New(withDefaults(Options{Listener: &net.TCPListener{}, Platform: newFakePlatform()}))
	if err != nil {
		t.Fatal(err)
	}
	ready := func(addrs ...string) []Replica {
		var rs []Replica
		for _, x := range addrs {
			rs = append(rs, Replica{Address: x, Ready: true})
		}
		return rs
	}
	at := func(r Revision, k, index int) Revision { r.Activators, r.ActivatorIndex = k, index; return r }
	steps := []struct {
		name string
		rev  Revision
		want []string
	}{
		{"second of two, four replicas", at(rev("a", 10, ready("r4:1", "r3:1", "r2:1", "r1:1")...), 2, 2), []string{"r3:1=10", "r4:1=10"}},
		{"first of two, five replicas: the remnant too", at(rev("a", 10, ready("r5:1", "r4:1", "r3:1", "r2:1", "r1:1")...), 2, 1),
			[]string{"r1:1=10", "r2:1=10", "r5:1=10"}},
		{"third of three, one replica: shared three ways", at(rev("a", 10, ready("r1:1")...), 3, 3), []string{"r1:1=4"}},
		{"position unknown: all, shared", at(rev("a", 10, ready("r2:1", "r1:1")...), 2, 0), []string{"r1:1=5", "r2:1=5"}},
		{"unlimited: all", at(rev("a", 0, ready("r2:1", "r1:1")...), 2, 2), []string{"r1:1=0", "r2:1=0"}},
	}
	for _, st := range steps {
		a.apply([]Revision{st.rev})
		if diff := cmp.Diff(st.want, viewOf(a, "default/a").Replicas); diff != "" {
			t.Errorf("%s (-want +got):\n%s", st.name, diff)
		}
	}
}

// TestSubsetTraffic: the first of two activators, containerConcurrency 1,
// two replicas: it sends only to its own replica (r1) and queues the
// second request rather than using the other activator's replica.
func TestSubsetTraffic(t *testing.T) {
	r := rev("hello", 1, Replica{Address: "r1:80", Ready: true}, Replica{Address: "r2:80", Ready: true})
	r.Activators, r.ActivatorIndex = 2, 1
	h := newHarness(t, nil, r)
	mine, theirs := h.backend("r1:80", true), h.backend("r2:80", true)
	mine.hold = make(chan struct{})
	done := make(chan int, 2)
	for range 2 {
		go func() { code, _, _ := h.do("hello.default", nil); done <- code }()
	}
	h.eventually("one on r1, one queued", func() bool { return mine.inFlight.Load() == 1 && h.a.global.count.Load() == 1 })
	close(mine.hold)
	for range 2 {
		if code := <-done; code != 200 {
			t.Errorf("status %d, want 200", code)
		}
	}
	if n := theirs.maxSeen.Load(); n != 0 {
		t.Errorf("the other activator's replica r2 saw %d requests, want 0", n)
	}
	if n := mine.maxSeen.Load(); n != 1 {
		t.Errorf("r1 saw %d at once, want 1 (containerConcurrency)", n)
	}
}
