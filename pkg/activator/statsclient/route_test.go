package statsclient

import (
	"context"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fasthttp"

	"ebb.dev/ebb/pkg/stats"
)

// replica is a fake autoscaler replica: it takes the reports of the
// buckets it holds and refuses the others with 421; hang makes it read a
// report and never answer (it may have taken it: it records it).
type replica struct {
	addr string
	mu   sync.Mutex
	open map[string]bool
	hang bool
	got  []string // "bucket revision" of every stat taken
}

func startReplica(t *testing.T) *replica {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{addr: ln.Addr().String(), open: map[string]bool{}}
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		b := string(ctx.QueryArgs().Peek("bucket"))
		batch, err := stats.ParseBatch(ctx.PostBody(), 100)
		if err != nil {
			ctx.Error(err.Error(), 400)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if !r.open[b] {
			ctx.Error("not held here", fasthttp.StatusMisdirectedRequest)
			return
		}
		for _, st := range batch {
			r.got = append(r.got, b+" "+st.Revision)
		}
		if r.hang {
			time.Sleep(300 * time.Millisecond) // past the client's timeout
		}
	}}
	go s.Serve(ln)
	t.Cleanup(func() { s.Shutdown() })
	return r
}

func (r *replica) set(f func(*replica)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

func (r *replica) taken() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]string(nil), r.got...)
	sort.Strings(out)
	return out
}

// fakeRouter puts revision "ns/bN" in bucket "bN", held by holder[bN].
type fakeRouter struct {
	mu      sync.Mutex
	holder  map[string]string
	changed chan struct{}
}

func (f *fakeRouter) Route(rev string) (string, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := rev[len("ns/"):]
	return b, f.holder[b]
}

func (f *fakeRouter) Changed() <-chan struct{} { return f.changed }

func (f *fakeRouter) move(b, addr string) {
	f.mu.Lock()
	f.holder[b] = addr
	f.mu.Unlock()
	f.changed <- struct{}{}
}

// TestRoutedReports: each bucket's reports reach its holder alone; a
// report sent while its bucket has no holder, or to a holder that let it
// go (421), reaches the next holder; one that a holder may have taken (it
// never answered) is not sent to that holder again, but to the next one;
// no replica takes a report twice.
func TestRoutedReports(t *testing.T) {
	a, b := startReplica(t), startReplica(t)
	a.set(func(r *replica) { r.open["b0"] = true })
	b.set(func(r *replica) { r.open["b1"] = true })
	router := &fakeRouter{holder: map[string]string{"b0": a.addr, "b1": b.addr}, changed: make(chan struct{})}
	c, err := New(Options{Router: router, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("not within 5s: %s", what)
			}
		}
	}
	report := func(rev string, at int64) {
		st := stat(rev, 1)
		st.Time = time.Unix(at, 0)
		c.post([]stats.Stat{st})
	}

	report("ns/b0", 1)
	report("ns/b1", 1)
	if diff := cmp.Diff([]string{"b0 ns/b0"}, a.taken()); diff != "" {
		t.Errorf("a took (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b1 ns/b1"}, b.taken()); diff != "" {
		t.Errorf("b took (-want +got):\n%s", diff)
	}

	// b1 changes hands: b lets it go before a holds it; a's Lease is seen
	// before a opens it (421), then a takes it.
	b.set(func(r *replica) { r.open["b1"] = false })
	router.move("b1", "")
	report("ns/b1", 2) // no holder: waits
	router.move("b1", a.addr)
	time.Sleep(50 * time.Millisecond) // refused (421): waits again
	if got := a.taken(); len(got) != 1 {
		t.Fatalf("a took %v before it held b1", got)
	}
	a.set(func(r *replica) { r.open["b1"] = true })
	eventually("the report sent during the hand-over reaches a", func() bool { return len(a.taken()) == 2 })

	// a hangs on b0 (it takes the report and never answers): the report
	// goes to the next holder, b, never to a again.
	a.set(func(r *replica) { r.hang = true })
	report("ns/b0", 3)
	b.set(func(r *replica) { r.open["b0"] = true })
	time.Sleep(2 * resendEvery) // a would have it again by now
	router.move("b0", b.addr)
	eventually("the unanswered report reaches b", func() bool { return len(b.taken()) == 2 })
	want := map[string][]string{
		"a": {"b0 ns/b0", "b0 ns/b0", "b1 ns/b1"}, // b0 at 1, b0 at 3 (unanswered), b1 at 2
		"b": {"b0 ns/b0", "b1 ns/b1"},
	}
	for name, r := range map[string]*replica{"a": a, "b": b} {
		if diff := cmp.Diff(want[name], r.taken()); diff != "" {
			t.Errorf("%s took (-want +got):\n%s", name, diff)
		}
	}
}

// renamingRouter routes "ns/b0" to bucket name[0] held by holder.
type renamingRouter struct {
	mu      sync.Mutex
	name    string
	holder  string
	changed chan struct{}
}

func (f *renamingRouter) Route(string) (string, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.name, f.holder
}

func (f *renamingRouter) Changed() <-chan struct{} { return f.changed }

// TestHeldReportsRerouted (issue 33, a stat held while its old-count
// bucket had no holder): once the fleet routes the revision to a bucket
// of another count, the waiting report goes there under its new bucket
// (before, it was re-posted under the old name, refused and held again
// every second, forever).
func TestHeldReportsRerouted(t *testing.T) {
	a := startReplica(t)
	a.set(func(r *replica) { r.open["c7-of-20"] = true })
	router := &renamingRouter{name: "b7-of-10", changed: make(chan struct{})}
	c, err := New(Options{Router: router, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	c.post([]stats.Stat{stat("ns/b0", 1)}) // b7-of-10 has no holder: waits
	router.mu.Lock()
	router.name, router.holder = "c7-of-20", a.addr
	router.mu.Unlock()
	router.changed <- struct{}{}
	for deadline := time.Now().Add(3 * time.Second); len(a.taken()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the held report never reached the holder of its revision's new bucket")
		}
	}
	if diff := cmp.Diff([]string{"c7-of-20 ns/b0"}, a.taken()); diff != "" {
		t.Errorf("taken (-want +got):\n%s", diff)
	}
}
