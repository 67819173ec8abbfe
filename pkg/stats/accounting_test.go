package stats

import (
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Unix(1_700_000_000, 0)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// interval is one request: arrives at in ms, ends at out ms (out < 0: still
// in flight at the report).
type interval struct {
	in, out int
	via     Arrival
}

type event struct {
	at  int
	in  bool
	via Arrival
}

// replay feeds the intervals to a to Accounting in time order (ends before
// arrivals at equal times, which does not change the integral).
func replay(a *Accounting, reqs []interval) {
	var evs []event
	for _, r := range reqs {
		evs = append(evs, event{at: r.in, in: true, via: r.via})
		if r.out >= 0 {
			evs = append(evs, event{at: r.out, via: r.via})
		}
	}
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].at != evs[j].at {
			return evs[i].at < evs[j].at
		}
		return !evs[i].in && evs[j].in
	})
	for _, e := range evs {
		if e.in {
			a.In(ms(e.at), e.via)
		} else {
			a.Out(ms(e.at), e.via)
		}
	}
}

func TestAccountingWindow(t *testing.T) {
	tests := []struct {
		name     string
		reqs     []interval
		reportAt int
		want     Snapshot
	}{
		{name: "idle", reportAt: 1000, want: Snapshot{Period: time.Second}},
		{name: "knative example: two requests of 500 ms in 1 s",
			reqs:     []interval{{in: 0, out: 500}, {in: 500, out: 1000}},
			reportAt: 1000, want: Snapshot{Period: time.Second, AverageConcurrency: 1.0, RequestCount: 2}},
		{name: "two overlapping requests of 500 ms",
			reqs:     []interval{{in: 100, out: 600}, {in: 200, out: 700}},
			reportAt: 1000, want: Snapshot{Period: time.Second, AverageConcurrency: 1.0, RequestCount: 2}},
		{name: "one request the whole window",
			reqs:     []interval{{in: 0, out: 1000}},
			reportAt: 1000, want: Snapshot{Period: time.Second, AverageConcurrency: 1.0, RequestCount: 1}},
		{name: "still in flight at the report",
			reqs:     []interval{{in: 250, out: -1}},
			reportAt: 1000, want: Snapshot{Period: time.Second, AverageConcurrency: 0.75, RequestCount: 1, InFlight: 1}},
		{name: "proxied part",
			reqs:     []interval{{in: 0, out: 1000}, {in: 0, out: 250, via: ViaActivator}, {in: 500, out: 1000, via: ViaActivator}},
			reportAt: 1000, want: Snapshot{Period: time.Second, AverageConcurrency: 1.75, AverageProxiedConcurrency: 0.75, RequestCount: 3, ProxiedRequestCount: 2}},
		{name: "ten short requests",
			reqs: []interval{{0, 10, 0}, {100, 110, 0}, {200, 210, 0}, {300, 310, 0}, {400, 410, 0},
				{500, 510, 0}, {600, 610, 0}, {700, 710, 0}, {800, 810, 0}, {900, 910, 0}},
			reportAt: 1000, want: Snapshot{Period: time.Second, AverageConcurrency: 0.1, RequestCount: 10}},
		{name: "two second window",
			reqs:     []interval{{in: 0, out: 2000}, {in: 1000, out: 1500}},
			reportAt: 2000, want: Snapshot{Period: 2 * time.Second, AverageConcurrency: 1.25, RequestCount: 2}},
		{name: "queued burst: four at once, one leaves every 250 ms",
			reqs:     []interval{{0, 250, 0}, {0, 500, 0}, {0, 750, 0}, {0, 1000, 0}},
			reportAt: 1000, want: Snapshot{Period: time.Second, AverageConcurrency: 2.5, RequestCount: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAccounting(t0)
			replay(a, tt.reqs)
			got := a.Report(ms(tt.reportAt))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Report (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAccountingCarryOver: counts reset at each report, in-flight requests
// carry over into the next window.
func TestAccountingCarryOver(t *testing.T) {
	a := NewAccounting(t0)
	a.In(ms(500), Direct)
	a.In(ms(500), ViaActivator)
	a.Out(ms(750), Direct)
	var got []Snapshot
	got = append(got, a.Report(ms(1000)))
	a.Out(ms(1500), ViaActivator)
	got = append(got, a.Report(ms(2000)))
	got = append(got, a.Report(ms(2000)))
	want := []Snapshot{
		{Period: time.Second, AverageConcurrency: 0.75, AverageProxiedConcurrency: 0.5, RequestCount: 2, ProxiedRequestCount: 1, InFlight: 1},
		{Period: time.Second, AverageConcurrency: 0.5, AverageProxiedConcurrency: 0.5},
		{},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
}

// TestAccountingOutOfOrder: an event stamped before the last one counts as
// the last one; the integral never runs backwards.
func TestAccountingOutOfOrder(t *testing.T) {
	a := NewAccounting(t0)
	a.In(ms(500), Direct)
	a.In(ms(400), Direct) // read the clock earlier, took the lock later
	a.Out(ms(750), Direct)
	a.Out(ms(750), Direct)
	got := a.Report(ms(1000))
	want := Snapshot{Period: time.Second, AverageConcurrency: 0.5, RequestCount: 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Report (-want +got):\n%s", diff)
	}
}

// TestAccountingConcurrent runs In/Out from many goroutines (for -race) and
// checks the counts.
func TestAccountingConcurrent(t *testing.T) {
	a := NewAccounting(t0)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				via := Arrival(i % 2)
				a.In(ms(g+i), via)
				a.Out(ms(g+i+1), via)
			}
		})
	}
	wg.Wait()
	got := a.Report(ms(5000))
	if got.RequestCount != 8000 || got.ProxiedRequestCount != 4000 || got.InFlight != 0 {
		t.Errorf("Report = %+v, want 8000 requests, 4000 proxied, none in flight", got)
	}
	if got.AverageProxiedConcurrency > got.AverageConcurrency {
		t.Errorf("proxied concurrency %v above total %v", got.AverageProxiedConcurrency, got.AverageConcurrency)
	}
}

// BenchmarkAccounting measures one request's accounting (In and Out), the
// cost the queue-proxy pays per request; Parallel shows the mutex under
// contention. BenchmarkAccountingBaseline is the floor: two clock reads.
func BenchmarkAccounting(b *testing.B) {
	a := NewAccounting(time.Now())
	b.ReportAllocs()
	for b.Loop() {
		a.In(time.Now(), Direct)
		a.Out(time.Now(), Direct)
	}
}

func BenchmarkAccountingParallel(b *testing.B) {
	a := NewAccounting(time.Now())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a.In(time.Now(), ViaActivator)
			a.Out(time.Now(), ViaActivator)
		}
	})
}

func BenchmarkAccountingBaseline(b *testing.B) {
	var sink time.Time
	b.ReportAllocs()
	for b.Loop() {
		sink = time.Now()
		sink = time.Now()
	}
	_ = sink
}
