package bucket

import (
	"slices"
	"testing"
	"time"
)

// TestOverlap: buckets of two counts share revisions exactly when their
// indexes agree modulo the counts' gcd, checked against the hash itself.
func TestOverlap(t *testing.T) {
	for _, nm := range [][2]int{{10, 20}, {3, 5}, {10, 4}, {7, 7}} {
		n, m := nm[0], nm[1]
		seen := map[[2]int]bool{}
		for k := range 20000 {
			rev := "ns/r" + string(rune('a'+k%26)) + string(rune('a'+k/26%26)) + string(rune('a'+k/676%26))
			seen[[2]int{Of(rev, n), Of(rev, m)}] = true
		}
		for i := range n {
			for j := range m {
				if overlap(i, n, j, m) != seen[[2]int{i, j}] {
					t.Errorf("Overlap(%d, %d, %d, %d) = %v; the hash says %v", i, n, j, m, overlap(i, n, j, m), seen[[2]int{i, j}])
				}
			}
		}
	}
}

func view(self string, count int, replicas []Replica, leases []Lease, held []int) View {
	v := View{Self: self, Count: count, Replicas: replicas, Leases: leases, Held: make([]bool, count), Releasing: make([]bool, count),
		FreeSince: make([]time.Time, count), Now: time.Unix(1000, 0), LeaseDuration: 15 * time.Second}
	for _, i := range held {
		v.Held[i] = true
	}
	return v
}

// TestDecideShapes: the rules of a --buckets change, one case each.
func TestDecideShapes(t *testing.T) {
	t.Run("a live Lease of another count blocks the overlapping buckets", func(t *testing.T) {
		st := Decide(view("new", 20, []Replica{{Identity: "new2", Count: 20}, {Identity: "old", Count: 10}},
			[]Lease{{Index: 3, Count: 10, Holder: "old", Live: true}}, nil))
		if st.Preferred != 20 {
			t.Fatalf("preferred %d, want 20 (two replicas of 20, one of 10)", st.Preferred)
		}
		if !st.Blocked[3] || !st.Blocked[13] || st.Blocked[4] || slices.Contains(st.Take, 3) || slices.Contains(st.Take, 13) {
			t.Errorf("blocked %v, take %v: want 3 and 13 blocked (3 of 10 is live), 4 free", st.Blocked, st.Take)
		}
	})
	t.Run("a count most replicas do not have takes nothing and lets go", func(t *testing.T) {
		st := Decide(view("stray", 20, []Replica{{Identity: "a", Count: 10}, {Identity: "b", Count: 10}}, nil, []int{1, 2}))
		if st.Preferred != 10 || len(st.Take) != 0 || !slices.Equal(st.Yield, []int{1, 2}) {
			t.Errorf("preferred %d, take %v, yield %v: want 10, nothing, [1 2]", st.Preferred, st.Take, st.Yield)
		}
	})
	t.Run("a tie goes to the smaller count", func(t *testing.T) {
		st := Decide(view("a", 10, []Replica{{Identity: "b", Count: 20}}, nil, nil))
		if st.Preferred != 10 || len(st.Take) != 10 {
			t.Errorf("preferred %d, take %v: want 10 and every bucket", st.Preferred, st.Take)
		}
	})
	t.Run("a tie goes to the count that holds the buckets", func(t *testing.T) {
		// The fleet moved to 20 (new holds its buckets); an old pod of 10
		// resumes, and the live replicas tie one to one: the buckets stay.
		var held []Lease
		for i := range 20 {
			held = append(held, Lease{Index: i, Count: 20, Holder: "new", Live: true})
		}
		st := Decide(view("old", 10, []Replica{{Identity: "new", Count: 20}}, held, nil))
		if st.Preferred != 20 || len(st.Take) != 0 {
			t.Errorf("preferred %d, take %v: want 20 and nothing taken back by the resumed old pod", st.Preferred, st.Take)
		}
		all := make([]int, 20)
		for i := range all {
			all[i] = i
		}
		if st := Decide(view("new", 20, []Replica{{Identity: "old", Count: 10}}, held, all)); st.Preferred != 20 || len(st.Yield) != 0 {
			t.Errorf("preferred %d, yield %v: want 20, nothing let go", st.Preferred, st.Yield)
		}
	})
	t.Run("lapsed Leases of a count nobody uses are swept", func(t *testing.T) {
		st := Decide(view("a", 10, nil, []Lease{{Index: 5, Count: 20, Holder: "dead"}, {Index: 6, Count: 20, Holder: "x", Live: true}}, nil))
		if len(st.Sweep) != 1 || st.Sweep[0].Index != 5 {
			t.Errorf("sweep %v, want the lapsed 5 of 20 only", st.Sweep)
		}
	})
	t.Run("a live Lease naming this replica without a term is taken back", func(t *testing.T) {
		st := Decide(view("a", 10, []Replica{{Identity: "b", Count: 10}}, []Lease{{Index: 7, Count: 10, Holder: "a", Live: true}}, nil))
		if !slices.Contains(st.Take, 7) {
			t.Errorf("take %v, want 7 back at once", st.Take)
		}
	})
	t.Run("a young replica is planned no free bucket while older ones live", func(t *testing.T) {
		v := view("young", 10, []Replica{{Identity: "old", Count: 10}}, nil, nil)
		v.Young = true
		if st := Decide(v); len(st.Take) != 0 {
			t.Errorf("take %v, want none", st.Take)
		}
		v = view("old", 10, []Replica{{Identity: "young", Count: 10, Young: true}}, nil, nil)
		if st := Decide(v); len(st.Take) != 10 {
			t.Errorf("the old replica takes %v, want all 10", st.Take)
		}
	})
}

type routesTable struct {
	counts  []int
	holders map[[2]int]string
	live    map[string]int // replica -> its count
}

func (r routesTable) Counts() []int { return r.counts }
func (r routesTable) Holder(i, n int) (string, bool) {
	h, ok := r.holders[[2]int{i, n}]
	return h, ok
}
func (r routesTable) Member(id string, n int) bool { c, ok := r.live[id]; return ok && c == n }

// TestRoute: a revision goes to the live holder in whichever count has
// one, never to a dead replica's Lease.
func TestRoute(t *testing.T) {
	rev := "default/hello"
	r := routesTable{counts: []int{20, 10}, holders: map[[2]int]string{{Of(rev, 20), 20}: "dead", {Of(rev, 10), 10}: "new"},
		live: map[string]int{"new": 10}}
	if i, n, h, ok := Route(rev, r); !ok || h != "new" || n != 10 || i != Of(rev, 10) {
		t.Errorf("Route = %d %d %q %v, want new's bucket of 10", i, n, h, ok)
	}
	r.live = map[string]int{}
	if _, _, _, ok := Route(rev, r); ok {
		t.Error("a route with no live holder")
	}
}

// TestOwns: the fence is open only within the renew deadline of the last
// renewal's start, on both clocks: a monotonic clock that stopped (a
// suspended node) or a wall clock stepped back cannot keep it open.
func TestOwns(t *testing.T) {
	at := time.Unix(1000, 0)
	both := func(d time.Duration) Instant { return Instant{Mono: at.Add(d), Wall: at.Add(d)} }
	for _, tc := range []struct {
		name string
		now  Instant
		want bool
		left time.Duration
	}{
		{"at the renewal", both(0), true, 10 * time.Second},
		{"within", both(9 * time.Second), true, time.Second},
		{"at the deadline", both(10 * time.Second), false, 0},
		{"long after", both(time.Hour), false, 0},
		{"before it", both(-time.Second), false, 0},
		{"monotonic stopped, wall on", Instant{Mono: at.Add(time.Second), Wall: at.Add(11 * time.Second)}, false, 0},
		{"wall stepped back, monotonic on", Instant{Mono: at.Add(11 * time.Second), Wall: at.Add(-time.Hour)}, false, 0},
		{"wall stepped back a little", Instant{Mono: at.Add(3 * time.Second), Wall: at.Add(-time.Second)}, true, 7 * time.Second},
	} {
		if got := Owns(both(0), tc.now, 10*time.Second); got != tc.want {
			t.Errorf("%s: Owns = %v, want %v", tc.name, got, tc.want)
		}
		if got := FenceLeft(both(0), tc.now, 10*time.Second); got != tc.left {
			t.Errorf("%s: FenceLeft = %v, want %v", tc.name, got, tc.left)
		}
	}
	if Owns(Instant{}, both(0), time.Hour) {
		t.Error("the fence is open without a renewal")
	}
	if got := At(at); !got.Mono.Equal(at) || !got.Wall.Equal(at) {
		t.Errorf("At = %v", got)
	}
}
