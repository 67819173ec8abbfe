package bucket

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNameParse(t *testing.T) {
	for _, tc := range []struct {
		i, n int
		want string
	}{{3, 10, "ebb-autoscaler-bucket-03-of-10"}, {0, 1, "ebb-autoscaler-bucket-0-of-1"}, {42, 100, "ebb-autoscaler-bucket-042-of-100"}} {
		if got := Name("ebb-autoscaler", tc.i, tc.n); got != tc.want {
			t.Errorf("Name(%d, %d) = %q, want %q", tc.i, tc.n, got, tc.want)
		}
		if i, n, ok := Parse("ebb-autoscaler", tc.want); !ok || i != tc.i || n != tc.n {
			t.Errorf("Parse(%q) = %d, %d, %v", tc.want, i, n, ok)
		}
	}
	for _, name := range []string{"ebb-autoscaler", "ebb-autoscaler-bucket-3-of-10", "ebb-autoscaler-bucket-10-of-10",
		"other-bucket-03-of-10", "ebb-autoscaler-bucket-03-of-10x", "ebb-autoscaler-bucket-000-of-000", "ebb-autoscaler-replica-x"} {
		if _, _, ok := Parse("ebb-autoscaler", name); ok {
			t.Errorf("Parse(%q) accepted it", name)
		}
	}
}

// TestOfSpreads: revisions spread evenly enough over the buckets (the
// largest within 15% of the mean at 100,000 revisions).
func TestOfSpreads(t *testing.T) {
	const n, revs = 10, 100000
	var count [n]int
	for i := range revs {
		count[Of(fmt.Sprintf("ns-%d/rev-%d", i%37, i), n)]++
	}
	if hi := slices.Max(count[:]); float64(hi) > 1.15*revs/n {
		t.Errorf("bucket sizes %v: the largest is over 1.15x the mean", count)
	}
	if Of("default/hello", 1) != 0 {
		t.Error("one bucket holds everything")
	}
}

// settle applies plans until none changes anything: the free buckets are
// taken, and a giver's bucket is freed and then taken. It returns the
// holders and how many buckets changed holder.
func settle(t *testing.T, members, holders []string) ([]string, int) {
	t.Helper()
	holders = slices.Clone(holders)
	moved := 0
	for range 100 {
		take, giver, give := Plan(members, holders, nil)
		changed := false
		for i, m := range take {
			if m != "" {
				holders[i], changed = m, true
			}
		}
		if giver != "" {
			if holders[give] != giver {
				t.Fatalf("giver %s gives bucket %d, held by %q", giver, give, holders[give])
			}
			holders[give], changed = "", true
			moved++
		}
		if !changed {
			return holders, moved
		}
	}
	t.Fatal("the plans never settle")
	return nil, 0
}

func loads(holders []string) map[string]int {
	l := map[string]int{}
	for _, h := range holders {
		l[h]++
	}
	return l
}

// TestPlan: from nothing, members end up holding n/m or one more each,
// whatever their order; a member's death moves its buckets only; a
// member joining takes about its share from the others, one at a time.
func TestPlan(t *testing.T) {
	const n = DefaultCount
	name := func(k int) string { return fmt.Sprintf("ebb-autoscaler-6d8f7c9b4-%c%c", 'a'+k, 'z'-k) }
	for m := 1; m <= 10; m++ {
		var members []string
		for k := range m {
			members = append(members, name(k))
		}
		holders, _ := settle(t, members, make([]string, n))
		for _, mem := range members {
			if h := loads(holders)[mem]; h < n/m || h > n/m+1 {
				t.Errorf("%d members: %s holds %d of %d buckets (%v)", m, mem, h, n, loads(holders))
			}
		}
		rev := slices.Clone(members)
		slices.Reverse(rev)
		if again, _ := settle(t, rev, make([]string, n)); !slices.Equal(again, holders) {
			t.Errorf("%d members: the plan depends on their order", m)
		}
		if m == 1 {
			continue
		}
		dead := members[0]
		after, moved := settle(t, members[1:], replace(holders, dead))
		for i := range holders {
			if holders[i] != dead && after[i] != holders[i] {
				t.Errorf("%d members, %s died: bucket %d moved from %s, which lives", m, dead, i, holders[i])
			}
		}
		if moved != 0 {
			t.Errorf("%d members, %s died: %d buckets given up by the living", m, dead, moved)
		}
		joined, moved := settle(t, append(slices.Clone(members), name(m)), holders)
		if got := loads(joined)[name(m)]; got < n/(m+1) || moved != got {
			t.Errorf("%d members, one joins: it holds %d buckets after %d moves, want at least %d, each moved once", m, got, moved, n/(m+1))
		}
	}
}

// replace frees the buckets of one holder.
func replace(holders []string, gone string) []string {
	out := slices.Clone(holders)
	for i, h := range out {
		if h == gone {
			out[i] = ""
		}
	}
	return out
}

func TestCheckCount(t *testing.T) {
	for n, ok := range map[int]bool{0: false, 1: true, 10: true, 100: true, 101: false, -1: false} {
		if err := CheckCount(n); (err == nil) != ok {
			t.Errorf("CheckCount(%d) = %v", n, err)
		}
	}
}

// TestCheckLeaseDuration: a duration the Lease would store rounded is
// refused, naming the fix (issue: --lease-duration=10.5s was stored as
// 10s, and others took buckets before their holders stopped).
func TestCheckLeaseDuration(t *testing.T) {
	for _, d := range []time.Duration{time.Second, 15 * time.Second, time.Hour} {
		if err := CheckLeaseDuration(d); err != nil {
			t.Errorf("CheckLeaseDuration(%v) = %v, want nil", d, err)
		}
	}
	for d, fix := range map[time.Duration]string{10500 * time.Millisecond: "11s", 500 * time.Millisecond: "1s", 0: "1s", -time.Second: "1s"} {
		err := CheckLeaseDuration(d)
		if err == nil || !strings.Contains(err.Error(), "whole number of seconds") || !strings.Contains(err.Error(), "(for example "+fix+")") {
			t.Errorf("CheckLeaseDuration(%v) = %v, want a refusal naming whole seconds and %s", d, err, fix)
		}
	}
}
