package main

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/scaling/decider"
	"ebb.dev/ebb/pkg/stats"
)

// fakePlatform answers every revision with the same ready pods, and the
// HPA class with their states: each at 40m of cpu against a 100m request.
// With no pods, every revision is at zero.
type fakePlatform struct {
	pods   []autoscaler.Pod
	states []autoscaler.PodState
}

func newFakePlatform(pods int) *fakePlatform {
	p := &fakePlatform{}
	for i := range pods {
		pod := autoscaler.Pod{Name: "pod-" + strconv.Itoa(i), Started: time.Now().Add(-time.Hour)}
		p.pods = append(p.pods, pod)
		cpu := 0.04
		p.states = append(p.states, autoscaler.PodState{Pod: pod, Ready: true, ReadySince: pod.Started,
			Containers: []decider.ContainerSample{{Name: "app", CPU: &cpu, CPURequest: 0.1}}})
	}
	return p
}

func (p *fakePlatform) PodStates(context.Context, autoscaler.RevisionKey) ([]autoscaler.PodState, error) {
	return p.states, nil
}

func (p *fakePlatform) ReadyPods(context.Context, autoscaler.RevisionKey) ([]autoscaler.Pod, error) {
	return p.pods, nil
}
func (p *fakePlatform) Scale(context.Context, autoscaler.RevisionKey, int32) error { return nil }
func (p *fakePlatform) SetActivatorInPath(context.Context, autoscaler.RevisionKey, bool) error {
	return nil
}

// fakeScraper returns a load that varies with the second.
type fakeScraper struct{}

// second is the current unix second, kept by keepSecond so that the fake
// scrapes do not read the clock (the autoscaler's work is measured).
var second atomic.Int64

func keepSecond(stop <-chan struct{}) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		second.Store(time.Now().Unix())
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

func (fakeScraper) Scrape(_ context.Context, p autoscaler.Pod) (stats.Stat, error) {
	sec := second.Load()
	return stats.Stat{Source: stats.SourceQueueProxy, PodName: p.Name, Period: time.Second,
		AverageConcurrency: float64(50 + sec%40), RequestCount: uint64(100 + sec%17)}, nil
}

// countingScraper counts the scrapes of the Scraper it wraps.
type countingScraper struct {
	autoscaler.Scraper
	n atomic.Int64
}

func (c *countingScraper) Scrape(ctx context.Context, p autoscaler.Pod) (stats.Stat, error) {
	c.n.Add(1)
	return c.Scraper.Scrape(ctx, p)
}

func scrapeCount(s autoscaler.Scraper) int64 {
	if c, ok := s.(*countingScraper); ok {
		return c.n.Load()
	}
	return 0
}
