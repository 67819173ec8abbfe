package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"ebb.dev/ebb/pkg/stats"
)

// fakePlatform has a fixed set of ready pods per revision and records what
// is applied.
type fakePlatform struct {
	mu        sync.Mutex
	pods      map[RevisionKey][]Pod
	scales    []int32
	activator []bool
	failScale bool
}

func (p *fakePlatform) ReadyPods(_ context.Context, rev RevisionKey) ([]Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Pod(nil), p.pods[rev]...), nil
}

func (p *fakePlatform) Scale(_ context.Context, _ RevisionKey, n int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failScale {
		return errors.New("scale subresource unavailable")
	}
	p.scales = append(p.scales, n)
	return nil
}

func (p *fakePlatform) SetActivatorInPath(_ context.Context, _ RevisionKey, in bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.activator = append(p.activator, in)
	return nil
}

func (p *fakePlatform) setPods(rev RevisionKey, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pods := make([]Pod, n)
	for i := range pods {
		pods[i] = Pod{Name: fmt.Sprintf("pod-%d", i), StatsAddr: fmt.Sprintf("10.0.0.%d:9090", i)}
	}
	p.pods[rev] = pods
}

// fakeScraper answers every pod with the same per-pod load, or fails.
type fakeScraper struct {
	mu      sync.Mutex
	perPod  float64
	rps     float64
	proxied float64
	fail    bool
}

func (s *fakeScraper) set(conc, rps float64) {
	s.mu.Lock()
	s.perPod, s.rps = conc, rps
	s.mu.Unlock()
}

func (s *fakeScraper) Scrape(_ context.Context, p Pod) (stats.Stat, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return stats.Stat{}, errors.New("connection refused")
	}
	return stats.Stat{Source: stats.SourceQueueProxy, PodName: p.Name, Period: time.Second,
		AverageConcurrency: s.perPod, AverageProxiedConcurrency: s.proxied,
		RequestCount: uint64(s.rps)}, nil
}

// fakeClock is a clock the test sets; its timers never fire (tests drive
// seconds themselves).
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(time.Duration) <-chan time.Time { return nil }

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// poked reports whether r was poked since the last look, and clears its
// events: the tests run the revision themselves (no Run, no worker).
func poked(r *revision) bool {
	ev := r.events.Swap(0)
	r.queued.Store(false)
	return ev&evPoke != 0
}

// fakeAuth knows a fixed set of tokens.
type fakeAuth map[string]Reporter

// Tokens of fakeAuth.
const (
	tokenActA     = "token-activator-a"
	tokenActB     = "token-activator-b"
	tokenApp      = "token-some-app"
	tokenDown     = "token-apiserver-down"
	forbiddenName = "system:serviceaccount:default:some-app"
)

func testAuth() fakeAuth {
	return fakeAuth{
		tokenActA: {Name: "system:serviceaccount:ebb-system:ebb-activator", Pod: "activator-a"},
		tokenActB: {Name: "system:serviceaccount:ebb-system:ebb-activator", Pod: "activator-b"},
	}
}

func (f fakeAuth) Authenticate(_ context.Context, token string) (Reporter, error) {
	switch token {
	case tokenApp:
		return Reporter{}, fmt.Errorf("%s: %w", forbiddenName, ErrNotActivator)
	case tokenDown:
		return Reporter{}, errors.New("tokenreviews: connection refused")
	}
	if who, ok := f[token]; ok {
		return who, nil
	}
	return Reporter{}, fmt.Errorf("token rejected: %w", ErrUnauthenticated)
}

// takePending takes the pending reports, as a close does.
func (r *revision) takePending() []stats.Stat {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inbox.Drain()
}
