// Package bucket is how the autoscaler's revisions are split over its
// replicas on a cluster, as Knative splits them: a revision hashes into
// one of a fixed number of buckets (Of), each bucket is a Lease (Name)
// held by one replica, and the replica that holds a revision's bucket
// scrapes its pods, decides for it, and takes its activators' reports.
// The activators and every replica compute the same bucket from the
// same revision key, so this rule is part of the wire contract between
// them.
//
// It is pure: the standard library only, no clock, no I/O.
package bucket

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultCount is the number of buckets when none is set: enough for up
// to 10 replicas to hold at least one each (Knative's largest bucket
// count, config-leader-election's buckets).
const DefaultCount = 10

// MaxCount bounds the number of buckets: each is a Lease renewed every
// retry period by its holder.
const MaxCount = 100

// CheckCount says why n is not a bucket count, or nil.
func CheckCount(n int) error {
	if n < 1 || n > MaxCount {
		return fmt.Errorf("%d buckets: must be within [1, %d]; %d lets up to %d replicas each hold one", n, MaxCount, DefaultCount, DefaultCount)
	}
	return nil
}

// Of is the bucket of a revision ("namespace/name") among n (n >= 1):
// FNV-1a of the key, modulo n.
func Of(revision string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(revision))
	return int(h.Sum32() % uint32(n))
}

// Name is the Lease of bucket i of n: PREFIX-bucket-II-of-NN, the index
// as wide as the count. The count is in the name, so replicas that
// disagree on it never hold the same Lease for different revisions.
func Name(prefix string, i, n int) string {
	w := len(strconv.Itoa(n))
	return fmt.Sprintf("%s-bucket-%0*d-of-%0*d", prefix, w, i, w, n)
}

// Parse reads a Name of the prefix: its index and count; ok is false for
// any other name.
func Parse(prefix, name string) (i, n int, ok bool) {
	rest, found := strings.CutPrefix(name, prefix+"-bucket-")
	if !found {
		return 0, 0, false
	}
	is, ns, found := strings.Cut(rest, "-of-")
	if !found || len(is) != len(ns) {
		return 0, 0, false
	}
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if err1 != nil || err2 != nil || CheckCount(n) != nil || i < 0 || i >= n || Name(prefix, i, n) != name {
		return 0, 0, false
	}
	return i, n, true
}

// Plan is what the members of a fleet should do next with the buckets,
// computed alike by each of them from the same view: holders[i] is the
// live holder of bucket i ("" when it is free), members the live
// replicas. A bucket stays with its holder (a replica's death moves only
// its own buckets, and nothing else stops); each free bucket goes to the
// member that holds the fewest, ties broken by the rendezvous score of
// member and bucket (take[i] names it; "" for a held bucket); and when no
// bucket is free but the loads differ by two or more (a replica joined),
// the most loaded member gives up one bucket (giver, give; giver "" when
// none), which the least loaded then takes. Repeated, the loads end
// within one of each other. A blocked bucket (blocked[i]; blocked may be
// nil) is neither free nor anyone's: nobody takes it.
func Plan(members, holders []string, blocked []bool) (take []string, giver string, give int) {
	take = make([]string, len(holders))
	if len(members) == 0 {
		return take, "", 0
	}
	ms := slices.Sorted(slices.Values(members))
	load := make(map[string]int, len(ms))
	for _, m := range ms {
		load[m] = 0
	}
	isBlocked := func(i int) bool { return i < len(blocked) && blocked[i] }
	free := 0
	for i, h := range holders {
		if isBlocked(i) {
			continue
		}
		if h == "" {
			free++
		} else if _, ok := load[h]; ok {
			load[h]++
		}
	}
	for i, h := range holders {
		if h != "" || isBlocked(i) {
			continue
		}
		best := ms[0]
		for _, m := range ms[1:] {
			if load[m] < load[best] || load[m] == load[best] && score(m, i) > score(best, i) {
				best = m
			}
		}
		take[i] = best
		load[best]++
	}
	if free > 0 {
		return take, "", 0
	}
	most, least := ms[0], ms[0]
	for _, m := range ms[1:] {
		if load[m] > load[most] {
			most = m
		}
		if load[m] < load[least] {
			least = m
		}
	}
	if load[most]-load[least] < 2 {
		return take, "", 0
	}
	give = -1
	for i, h := range holders {
		if h == most && (give < 0 || score(least, i) > score(least, give)) {
			give = i
		}
	}
	return take, most, give
}

// score is the rendezvous score of a member for a bucket.
func score(member string, i int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(member))
	return mix(h.Sum64() ^ uint64(i+1)*0x9e3779b97f4a7c15)
}

// mix is SplitMix64's finalizer: FNV of names that differ in one
// character differs in few bits, and the score must not follow them.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// CheckLeaseDuration says why d cannot be a Lease's duration, or nil.
// A Lease stores its duration in whole seconds (leaseDurationSeconds),
// and every replica and activator judges another's expiry by the stored
// value: a duration of 10.5s would be stored as 10s, and others would
// take a bucket half a second before its holder stops deciding. So a
// duration must be a whole number of seconds, at least one.
func CheckLeaseDuration(d time.Duration) error {
	if d < time.Second || d%time.Second != 0 {
		up := (d + time.Second - 1).Truncate(time.Second)
		return fmt.Errorf("%v: a Lease stores its duration in whole seconds (leaseDurationSeconds), and the other replicas judge its "+
			"expiry by the stored value; use a whole number of seconds, at least 1s (for example %v)", d, max(up, time.Second))
	}
	return nil
}
