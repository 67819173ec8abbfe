package fleetapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/autoscaler/bucket"
	"ebb.dev/ebb/pkg/stats"
)

// The two ways an activator's reports can reach the replica that decides
// for their revision (docs/kubernetes.md, "Sharding"):
//
//   - direct: the activator knows each bucket's holder (their Leases)
//     and posts each bucket's stats to it: one hop;
//   - forwarded (Knative's statforwarder): it posts the whole report to
//     any replica, which takes its own buckets' stats and forwards each
//     other bucket's to its holder: two hops for all but 1/replicas of
//     the stats.
//
// BenchmarkReportRouting measures both on three replicas (real
// autoscalers' stats endpoints behind the gate, over loopback HTTP):
// CPU (activator and replicas together) and time per report of 1,000
// revisions' stats.

const (
	routingReplicas = 3
	routingBuckets  = bucket.DefaultCount
	routingRevs     = 1000
	routingSecret   = "bench-secret"
)

// routingFleet is three replicas, each holding every third bucket.
type routingFleet struct {
	addrs  []string // the replicas' stats addresses
	owner  [routingBuckets]int
	client *http.Client
	report []stats.Stat
	next   int
}

func newRoutingFleet(b *testing.B, forwarding bool) *routingFleet {
	f := &routingFleet{client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	for i := range f.owner {
		f.owner[i] = i % routingReplicas
	}
	auth, err := autoscaler.NewSharedSecret(routingSecret, "activator")
	if err != nil {
		b.Fatal(err)
	}
	for r := range routingReplicas {
		as := autoscaler.New(autoscaler.Options{StatsAuth: auth, StatsRate: 1e9, StatsBurst: 1 << 30})
		g := NewGate("bench", routingBuckets, nil)
		for i, o := range f.owner {
			if o == r {
				g.Open(i)
			}
		}
		var h http.Handler = g.handler(as.StatsHandler())
		if forwarding {
			h = &forwarder{f: f, self: r, local: h}
		}
		srv := httptest.NewServer(h)
		b.Cleanup(srv.Close)
		f.addrs = append(f.addrs, srv.Listener.Addr().String())
		for i := range routingRevs {
			k := revKey(i)
			if f.owner[bucket.Of(k.String(), routingBuckets)] == r {
				if err := as.Upsert(k, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for i := range routingRevs {
		f.report = append(f.report, stats.Stat{Source: stats.SourceActivator, PodName: "activator-1", Revision: revKey(i).String(),
			Time: time.Unix(1_800_000_000, 0), Period: time.Second, AverageConcurrency: 3, RequestCount: 30})
	}
	return f
}

func revKey(i int) autoscaler.RevisionKey {
	return autoscaler.RevisionKey{Namespace: "ns-" + strconv.Itoa(i%7), Name: "rev-" + strconv.Itoa(i)}
}

// byBucket splits stats by bucket.
func byBucket(ss []stats.Stat) map[int][]stats.Stat {
	out := map[int][]stats.Stat{}
	for _, st := range ss {
		i := bucket.Of(st.Revision, routingBuckets)
		out[i] = append(out[i], st)
	}
	return out
}

// post sends stats of one bucket (i >= 0) or of any (i < 0) to addr;
// the whole report (i < 0) is answered by the forwarders, which count
// nothing.
func (f *routingFleet) post(addr string, i int, ss []stats.Stat) error {
	body, err := stats.AppendBatch(nil, ss)
	if err != nil {
		return err
	}
	url := "http://" + addr + stats.BatchPath
	if i >= 0 {
		url += "?" + bucketParam + "=" + bucket.Name("bench", i, routingBuckets)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", stats.BatchContentType)
	req.Header.Set("Authorization", "Bearer "+routingSecret)
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || i >= 0 && !bytes.Contains(msg, []byte(`"accepted": `+strconv.Itoa(len(ss)))) {
		return fmt.Errorf("POST to %s: %d %s", addr, resp.StatusCode, msg)
	}
	return nil
}

// direct: each bucket's stats to its holder, at once.
func (f *routingFleet) direct() error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i, ss := range byBucket(f.report) {
		wg.Go(func() {
			if err := f.post(f.addrs[f.owner[i]], i, ss); err != nil {
				mu.Lock()
				first = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// forwarded: the whole report to the next replica in turn.
func (f *routingFleet) forwarded() error {
	f.next = (f.next + 1) % routingReplicas
	return f.post(f.addrs[f.next], -1, f.report)
}

// forwarder is a replica that takes any report: its own buckets' stats
// through its gated endpoint, the others' forwarded to their holders
// (with the activator's credentials, which each holder checks again).
type forwarder struct {
	f     *routingFleet
	self  int
	local http.Handler
}

func (fw *forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get(bucketParam) != "" { // one bucket's, forwarded here or its own
		fw.local.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ss, err := stats.ParseBatch(body, 1<<20)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var wg sync.WaitGroup
	failed := false
	var mu sync.Mutex
	for i, part := range byBucket(ss) {
		wg.Go(func() {
			if err := fw.f.post(fw.f.addrs[fw.f.owner[i]], i, part); err != nil {
				mu.Lock()
				failed = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if failed {
		http.Error(w, "forwarding failed", http.StatusBadGateway)
	}
}

var routingCost = map[string]float64{}

func BenchmarkReportRouting(b *testing.B) {
	for _, mode := range []string{"direct", "forwarded"} {
		b.Run(mode, func(b *testing.B) {
			f := newRoutingFleet(b, mode == "forwarded")
			send := f.direct
			if mode == "forwarded" {
				send = f.forwarded
			}
			b.ReportAllocs()
			start := processCPU()
			for b.Loop() {
				if err := send(); err != nil {
					b.Fatal(err)
				}
			}
			cost := float64(processCPU()-start) / float64(b.N) / 1e6
			b.ReportMetric(cost, "cpu-ms/report")
			routingCost[mode] = cost
			if d, ok := routingCost["direct"]; ok && mode == "forwarded" && d > 0 {
				b.ReportMetric(cost/d, "x-cpu-of-direct")
			}
		})
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
