package activator

import (
	"fmt"
	"math/rand/v2"

	"ebb.dev/ebb/pkg/config"
)

// LoadBalancing is a policy for picking a replica with a free slot.
type LoadBalancing uint8

// The policies. LBAuto resolves by the revision's containerConcurrency as
// Knative does: 0 (unlimited) power of two choices, 1 to 3 first
// available, more round robin.
const (
	LBAuto LoadBalancing = iota
	lbPowerOfTwo
	lbFirstAvailable
	LBRoundRobin
)

var lbNames = [...]string{
	LBAuto:           config.LoadBalancingAuto,
	lbPowerOfTwo:     config.LoadBalancingPowerOfTwo,
	lbFirstAvailable: config.LoadBalancingFirstAvailable,
	LBRoundRobin:     config.LoadBalancingRoundRobin,
}

// String returns the annotation value of p.
func (p LoadBalancing) String() string {
	if int(p) < len(lbNames) {
		return lbNames[p]
	}
	return fmt.Sprintf("LoadBalancing(%d)", p)
}

// ParseLoadBalancing reads a value of config.AnnotationLoadBalancing with
// config.ParseLoadBalancing (the empty string is LBAuto). A bad value
// returns LBAuto and the *fielderr.Error that names it.
func ParseLoadBalancing(s string) (LoadBalancing, error) {
	name, err := config.ParseLoadBalancing(s)
	if err != nil {
		return LBAuto, err
	}
	for p, n := range lbNames {
		if name == n {
			return LoadBalancing(p), nil
		}
	}
	panic("activator: config.LoadBalancingPolicies and lbNames differ: " + name)
}

// resolve turns LBAuto into Knative's choice for containerConcurrency cc.
func (p LoadBalancing) resolve(cc int) LoadBalancing {
	if p != LBAuto {
		return p
	}
	switch {
	case cc == 0:
		return lbPowerOfTwo
	case cc <= 3:
		return lbFirstAvailable
	default:
		return LBRoundRobin
	}
}

// pick takes a slot on one of the replicas of s under its policy, or
// returns nil when every replica is full (or there is none). rr is the
// revision's round-robin cursor.
func (s *replicaSet) pick(rr *cursor) *replica {
	switch len(s.replicas) {
	case 0:
		return nil
	case 1:
		if r := s.replicas[0]; r.tryTake() {
			return r
		}
		return nil
	}
	switch s.policy {
	case lbPowerOfTwo:
		return s.pickPowerOfTwo()
	case LBRoundRobin:
		return s.pickRoundRobin(rr)
	default:
		return s.pickFirstAvailable()
	}
}

// pickFirstAvailable scans the replicas in address order: it packs the
// load on the first ones, which suits small containerConcurrency.
func (s *replicaSet) pickFirstAvailable() *replica {
	for _, r := range s.replicas {
		if r.tryTake() {
			return r
		}
	}
	return nil
}

// pickRoundRobin starts the scan one further than the last pick.
func (s *replicaSet) pickRoundRobin(rr *cursor) *replica {
	n := len(s.replicas)
	start := int(rr.next() % uint32(n))
	for i := range n {
		if r := s.replicas[(start+i)%n]; r.tryTake() {
			return r
		}
	}
	return nil
}

// pickPowerOfTwo draws two distinct replicas at random and takes the one
// with fewer requests in flight (the first drawn on a tie, which is random
// too). Racy by design, like Knative's: the counts may move between the
// read and the take, which only makes the choice slightly less good. If
// both are full (a capacity-limited revision with the policy forced by
// annotation), it falls back to a scan.
func (s *replicaSet) pickPowerOfTwo() *replica {
	n := len(s.replicas)
	i := rand.IntN(n)
	j := rand.IntN(n - 1)
	if j >= i {
		j++
	}
	a, b := s.replicas[i], s.replicas[j]
	if b.inFlight.Load() < a.inFlight.Load() {
		a, b = b, a
	}
	if a.tryTake() {
		return a
	}
	if b.tryTake() {
		return b
	}
	return s.pickFirstAvailable()
}
