package faultfleet

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"ebb.dev/ebb/pkg/autoscaler/bucket"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster/clustertest"
	"ebb.dev/ebb/pkg/platform/kubernetes/fence"
	"ebb.dev/ebb/pkg/platform/kubernetes/leader"
)

var (
	schedules = flag.Int("schedules", 2, "random fault schedules to run, in parallel (-test.parallel); make test-fleet runs FAULT_SCHEDULES")
	firstSeed = flag.Uint64("seed", 1, "the first schedule's seed")
	faultTime = flag.Duration("schedule-time", 4*time.Second, "how long each schedule makes faults (then it settles for two lease durations)")
)

// The fleet's timings: short, whole-second leases (a Lease stores whole
// seconds).
const (
	buckets       = 4
	leaseDuration = time.Second
	renewDeadline = 700 * time.Millisecond
	retryPeriod   = 250 * time.Millisecond
)

var leaseGVR = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

// world is one schedule's cluster: the Leases on a fake clientset (its
// watch feeds the replicas' informers), the scale writes on an HTTP fake
// API server that checks each against the Lease record as it lands.
type world struct {
	t      *testing.T
	rng    *rand.Rand
	rngMu  sync.Mutex
	leases *fake.Clientset
	api    *httptest.Server

	replicas   sync.Map // identity -> *replica
	landed     atomic.Int64
	violations atomic.Int64
	mu         sync.Mutex
	first      string // the first violation, described
	firstAt    time.Duration
	firstKeys  []string
	tl         *timeline
	// listing counts the replicas' informers not yet watching (started,
	// List not yet followed by its Watch); gap orders a deletion by hand
	// against a start (deleteLease).
	listing atomic.Int64
	gap     sync.Mutex
	// lag is how late a 10 ms timer fired at worst during the schedule
	// (watchLag): a process starved of CPU.
	lag atomic.Int64
	// starved counts the writes that landed on another's term after the
	// fake API server read them more than the margin after their last
	// check (the fence's gate, as their bytes left), on a starved
	// machine (serveScale).
	starved atomic.Int64
	// sent is when each write's body passed the fence's gate (its last
	// check, as the client wrote it out), by request id; guarded by mu.
	sent   map[string]time.Time
	nextID atomic.Int64
}

// margin is how long after a holder's fence closes another replica may
// take its bucket at the earliest: the lease duration less the renew
// deadline. A write that reaches the API server within it of passing the
// fence cannot land on the next holder's term.
const margin = leaseDuration - renewDeadline

// maxLag is the timer lag past which a schedule's liveness is not judged:
// the fleet's 250 ms retry period cannot be kept on a machine that late.
const maxLag = 100 * time.Millisecond

// watchLag records in w.lag how late a 10 ms timer fires, until done.
func (w *world) watchLag(done <-chan struct{}) {
	for {
		t0 := time.Now()
		select {
		case <-done:
			return
		case <-time.After(10 * time.Millisecond):
		}
		if late := int64(time.Since(t0) - 10*time.Millisecond); late > w.lag.Load() {
			w.lag.Store(late)
		}
	}
}

func (w *world) intn(n int) int {
	w.rngMu.Lock()
	defer w.rngMu.Unlock()
	return w.rng.IntN(n)
}

// newWorld makes the cluster of a schedule. Lease calls are delayed (up
// to 30 ms, one in 50 by 300 ms) and fail one in 50 (leaseAPI); scale writes are
// delayed up to 50 ms before they land (one in 10 by 300 ms), and one
// in 20 is throttled (429
// with Retry-After: client-go waits and sends it again, through the
// fence again).
func newWorld(t *testing.T, seed uint64) *world {
	w := &world{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), leases: fake.NewClientset(), tl: &timeline{start: time.Now()},
		sent: map[string]time.Time{}}
	clustertest.Optimistic(w.leases, "leases")
	w.leases.PrependWatchReactor("leases", w.watchLeases)
	w.api = httptest.NewServer(http.HandlerFunc(w.serveScale))
	t.Cleanup(w.api.Close)
	stop := make(chan struct{})
	w.recordLeases(stop)
	t.Cleanup(func() { close(stop) })
	return w
}

// watchLeases starts a watch of the Leases (an informer's, after its
// List) and counts the informer as watching once it is established.
//
// The fake's watch replays the objects that exist when it starts, never
// a deletion made between the List and the Watch, where the API server's
// watch from the List's resourceVersion replays every event since. An
// informer that listed a Lease, or missed its creation, and then missed
// its deletion, would see a bucket that is not there or miss one that
// was held: a fault the API server cannot make. So a Lease is deleted by
// hand only while no informer is between its List and its Watch
// (deleteLease).
func (w *world) watchLeases(a k8stesting.Action) (bool, watch.Interface, error) {
	var opts metav1.ListOptions
	if wa, ok := a.(k8stesting.WatchActionImpl); ok {
		opts = wa.ListOptions
	}
	wi, err := w.leases.Tracker().Watch(a.GetResource(), a.GetNamespace(), opts)
	if err != nil {
		return true, nil, err
	}
	w.listing.Add(-1)
	w.tl.add("fault: a watch of the Leases starts from rv=%q", opts.ResourceVersion)
	return true, wi, nil
}

// deleteLease deletes bucket i's Lease by hand, once every informer
// watches (watchLeases); it gives up after a second ("" then).
func (w *world) deleteLease(i int) string {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		w.gap.Lock()
		if w.listing.Load() == 0 {
			_ = w.leases.Tracker().Delete(leaseGVR, config.SystemNamespace, bucket.Name(config.AutoscalerName, i, buckets))
			w.gap.Unlock()
			return "delete the Lease of bucket " + strconv.Itoa(i)
		}
		w.gap.Unlock()
		if time.Now().After(deadline) {
			return "nothing (an informer is between its List and its Watch)"
		}
	}
}

// serveScale lands a scale write for revision rev-I (bucket I) from the
// replica its User-Agent names, and checks the Lease record then.
func (w *world) serveScale(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/scale") {
		http.Error(rw, "not served", http.StatusNotFound)
		return
	}
	if w.intn(20) == 0 {
		rw.Header().Set("Retry-After", "1")
		http.Error(rw, "throttled", http.StatusTooManyRequests)
		return
	}
	received := time.Now()
	d := time.Duration(w.intn(50)) * time.Millisecond
	if w.intn(10) == 0 {
		d = 300 * time.Millisecond // a slow write: in flight when its bucket is let go
	}
	time.Sleep(d)
	if r.Context().Err() != nil {
		return // the client gave up (its deadline): the API server drops it before storage
	}
	// The API server ends a request at its timeout from when it read it,
	// on its own clock: a write that reaches storage later is not applied.
	// (Without this, a client's cancellation, which reaches this handler
	// only when its goroutine next runs, was the only bound: on a loaded
	// machine writes landed a second past their timeout.)
	if timeout, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && time.Since(received) > timeout {
		http.Error(rw, "the request's timeout passed", http.StatusGatewayTimeout)
		return
	}
	rev := path.Base(path.Dir(r.URL.Path))
	i, _ := strconv.Atoi(strings.TrimPrefix(rev, "rev-"))
	writer := strings.TrimPrefix(r.UserAgent(), config.AutoscalerName+"/")
	holder := w.holder(i)
	w.landed.Add(1)
	lease := bucket.Name(config.AutoscalerName, i, buckets)
	checked, _ := strconv.ParseInt(r.Header.Get(checkedHeader), 10, 64)
	id := r.Header.Get(idHeader)
	w.mu.Lock()
	sent, ok := w.sent[id]
	delete(w.sent, id)
	w.mu.Unlock()
	if !ok {
		sent = time.Unix(0, checked)
	}
	w.tl.add("scale %s (%s) by %s landed %v after it was read, %v after it passed the fence, read %v after its last check; its timeout %s; holder %q",
		rev, lease, writer, time.Since(received), time.Since(time.Unix(0, checked)), received.Sub(sent), r.URL.Query().Get("timeout"), holder)
	if holder != "" && holder != writer && received.Sub(sent) > margin && time.Duration(w.lag.Load()) > margin/2 {
		// Read by the server longer after the write's last check (as its
		// body left the client) than the margin the taker waits out, on a
		// machine starved of CPU: the API server itself read it late,
		// which no client can bound (it counts the timeout from its read).
		// Any wait of the client's own, however long, is not excused.
		w.starved.Add(1)
	} else if holder != "" && holder != writer {
		w.violations.Add(1)
		w.mu.Lock()
		if w.first == "" {
			w.first = fmt.Sprintf("a scale of %s by %s landed while the Lease of bucket %d names %s", rev, writer, i, holder)
			w.firstAt, w.firstKeys = time.Since(w.tl.start), []string{lease, writer + ":", holder + ":", "fault", "holding"}
		}
		w.mu.Unlock()
	}
	rw.Header().Set("Content-Type", r.Header.Get("Content-Type"))
	body := make([]byte, r.ContentLength)
	_, _ = r.Body.Read(body)
	_, _ = rw.Write(body)
}

// holder is bucket i's holder in the API server's own record ("": none).
func (w *world) holder(i int) string {
	obj, err := w.leases.Tracker().Get(leaseGVR, config.SystemNamespace, bucket.Name(config.AutoscalerName, i, buckets))
	if err != nil {
		return ""
	}
	return ptr.Deref(obj.(*coordinationv1.Lease).Spec.HolderIdentity, "")
}

// replica is one autoscaler of the fleet: its real Buckets, its real
// write clients, its two clocks, and a suspension.
type replica struct {
	id     string
	b      *leader.Buckets
	writes kubernetes.Clients
	// The clocks: the wall clock is stepped (wallOff); the monotonic one
	// never jumps, but stops while the node is suspended (and is behind by
	// the suspension after it: monoOff).
	wallOff, monoOff atomic.Int64
	suspended        atomic.Bool
	wasSuspended     atomic.Bool
	frozen           atomic.Int64  // the monotonic reading it stopped at (UnixNano)
	resumed          chan struct{} // closed at the end of the suspension; guarded by mu
	mu               sync.Mutex
	pause            atomic.Int64 // how long the next writes wait after the check
	connPause        atomic.Int64 // how long the next writes wait with their connection, before they are written
	watchStall       atomic.Int64 // its watch passes no event on before this time (UnixNano): a watch that lags
	// inClient: its writes wait out a suspension inside the HTTP client,
	// with their connection, where the context's deadline no longer stops
	// them (else before the client).
	inClient atomic.Bool
	hang     atomic.Bool // its Holder's Lose hangs (until the schedule ends)
	stop     func()
	ended    chan struct{}
}

func (r *replica) wall() time.Time { return time.Now().Add(time.Duration(r.wallOff.Load())) }

func (r *replica) mono() time.Time {
	if r.suspended.Load() {
		return time.Unix(0, r.frozen.Load())
	}
	return time.Now().Add(time.Duration(r.monoOff.Load()))
}

// suspend stops the node for d: its monotonic clock stops, its Lease
// writes and its scale writes wait (a suspended process sends nothing),
// its wall clock runs on.
func (r *replica) suspend(d time.Duration) {
	r.mu.Lock()
	if r.suspended.Load() {
		r.mu.Unlock()
		return
	}
	r.frozen.Store(r.mono().UnixNano())
	r.wasSuspended.Store(true)
	r.resumed = make(chan struct{})
	r.suspended.Store(true)
	r.mu.Unlock()
	time.AfterFunc(d, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.monoOff.Store(r.frozen.Load() - time.Now().UnixNano()) // on from where it stopped
		r.suspended.Store(false)
		close(r.resumed)
	})
}

// waitResumed waits while the node is suspended.
func (r *replica) waitResumed() {
	r.mu.Lock()
	ch := r.resumed
	r.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// Gain and Lose: the replica's Holder. Lose may hang (the hand-off is
// bounded without it).
func (r *replica) Gain(context.Context, int) {}
func (r *replica) Lose(ctx context.Context, _ int) {
	if r.hang.Load() {
		<-r.ended
	}
}

func (w *world) start(id string) *replica {
	r := &replica{id: id, ended: make(chan struct{})}
	w.replicas.Store(id, r)
	w.gap.Lock()
	w.listing.Add(1) // its informer lists, then watches (watchLeases)
	w.gap.Unlock()
	cfg := &rest.Config{Host: w.api.URL, QPS: cluster.WritesQPS, Burst: cluster.WritesBurst, UserAgent: config.AutoscalerName + "/" + id}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { // below the fence: between its check and the wire
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			rev := path.Base(path.Dir(req.URL.Path))
			i, _ := strconv.Atoi(strings.TrimPrefix(rev, "rev-"))
			lease := bucket.Name(config.AutoscalerName, i, buckets)
			checked := time.Now()
			req.Header.Set(checkedHeader, strconv.FormatInt(checked.UnixNano(), 10))
			id := strconv.FormatInt(w.nextID.Add(1), 10)
			req.Header.Set(idHeader, id)
			mark := func() { w.mu.Lock(); w.sent[id] = time.Now(); w.mu.Unlock() }
			if req.Body != nil {
				req.Body = &sentBody{ReadCloser: req.Body, sent: mark}
			}
			if get := req.GetBody; get != nil { // a retry on a new connection reads the body again
				req.GetBody = func() (io.ReadCloser, error) {
					b, err := get()
					if err != nil || b == nil || b == http.NoBody {
						return b, err
					}
					return &sentBody{ReadCloser: b, sent: mark}, nil
				}
			}
			time.Sleep(time.Duration(r.pause.Load()))
			if !r.inClient.Load() {
				r.waitResumed()
			}
			sent := time.Since(checked)
			var gotConn, wrote atomic.Int64
			var reused atomic.Bool
			req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
				GotConn: func(ci httptrace.GotConnInfo) {
					time.Sleep(time.Duration(r.connPause.Load()))
					r.waitResumed()
					gotConn.Store(int64(time.Since(checked)))
					reused.Store(ci.Reused)
				},
				WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(int64(time.Since(checked))) },
			}))
			resp, err := rt.RoundTrip(req)
			if time.Duration(wrote.Load()) > margin/3 {
				w.tl.add("scale %s (%s) by %s: slow to leave: sent %v after the fence, conn at %v (reused %v), wrote at %v", rev, lease, r.id, sent,
					time.Duration(gotConn.Load()), reused.Load(), time.Duration(wrote.Load()))
			}
			if err != nil || resp.StatusCode != http.StatusOK {
				w.tl.add("scale %s (%s) by %s: passed the fence with %s left, sent %v later, failed %v later: %v %v", rev, lease, r.id,
					req.URL.Query().Get("timeout"), sent, time.Since(checked), err, resp != nil && resp.StatusCode != http.StatusOK)
			}
			return resp, err
		})
	})
	var err error
	if r.writes, err = kubernetes.ClientsFor(cfg); err != nil {
		w.t.Fatal(err)
	}
	r.b, err = leader.NewBuckets(leader.BucketOptions{Client: leaseAPI{Clientset: w.leases, w: w, r: r}, Namespace: config.SystemNamespace,
		Identity: id, Count: buckets, Logger: w.tl.logger(id), LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		HandoffTimeout: retryPeriod, Holder: r, Now: r.mono, Wall: r.wall})
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.b.Run(ctx) })
	wg.Go(func() { r.write(ctx) })
	r.stop = func() { cancel(); close(r.ended); wg.Wait() }
	return r
}

// write scales the revision of every bucket the replica holds, every 20
// ms, at most 8 writes in flight: each with its bucket's claim.
func (r *replica) write(ctx context.Context) {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		for i := range buckets {
			if !r.b.Owns(i) {
				continue
			}
			select {
			case sem <- struct{}{}:
			default:
				continue
			}
			wg.Go(func() {
				defer func() { <-sem }()
				name := "rev-" + strconv.Itoa(i)
				s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}}
				_, _ = r.writes.Writes.AppsV1().Deployments("default").UpdateScale(fence.For(ctx, r.b, i), name, s, metav1.UpdateOptions{})
			})
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// checkedHeader carries, from the replica's transport to the fake API
// server, when the write passed the fence (Unix nanoseconds): the
// timeline shows how long it then took to reach storage.
const checkedHeader = "X-Faultfleet-Checked"

// idHeader names a write, for the fake API server to find when its body
// passed the fence's gate (world.sent).
const idHeader = "X-Faultfleet-Id"

// sentBody records when the client first read the request's body for
// the wire, once the fence's gate (the body it wraps) let it.
type sentBody struct {
	io.ReadCloser
	sent func()
	once sync.Once
}

func (b *sentBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.once.Do(b.sent)
	}
	return n, err
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// fault is one thing a schedule does to the fleet.
func (w *world) fault(live map[string]*replica, next *int) string {
	ids := make([]string, 0, len(live))
	for id := range live {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return ""
	}
	r := live[ids[w.intn(len(ids))]]
	switch w.intn(8) {
	case 0: // a stop: its buckets handed off, maybe with a Lose that hangs
		r.hang.Store(w.intn(2) == 0)
		r.stop()
		delete(live, r.id)
		return "stop " + r.id
	case 1: // a new replica
		*next++
		id := "r" + strconv.Itoa(*next)
		live[id] = w.start(id)
		return "start " + id
	case 2: // a bucket Lease deleted by hand
		return w.deleteLease(w.intn(buckets))
	case 3: // a pause between the fence's check and the wire, past the fence
		// before the HTTP client (its context's deadline then refuses a
		// late write), or inside it, once it has the connection (a
		// connection that came as the deadline passed, a writer
		// goroutine that ran late: the client sends it)
		p, where := &r.pause, "before the client"
		if w.intn(2) == 0 {
			p, where = &r.connPause, "with their connection"
		}
		p.Store(int64(time.Duration(200+w.intn(1000)) * time.Millisecond))
		time.AfterFunc(time.Duration(100+w.intn(500))*time.Millisecond, func() { p.Store(0) })
		return "pause the writes of " + r.id + " " + where
	case 4: // the wall clock is stepped, up to 3 s either way; never back
		// on a node that was suspended: both clocks would have lost time,
		// and the fence measures it with the one that did not
		step := time.Duration(w.intn(6000)-3000) * time.Millisecond
		if r.wasSuspended.Load() {
			step = step.Abs()
		}
		r.wallOff.Add(int64(step))
		return "step the wall clock of " + r.id + " by " + step.String()
	case 5: // the node is suspended (never after its wall clock was stepped back)
		if r.wallOff.Load() < 0 {
			return "nothing"
		}
		r.inClient.Store(w.intn(2) == 0)
		r.suspend(time.Duration(200+w.intn(1500)) * time.Millisecond)
		if r.inClient.Load() {
			return "suspend " + r.id + " (its writes stopped inside the HTTP client)"
		}
		return "suspend " + r.id
	case 6: // its watch lags: no event reaches it for 300 ms to 1.5 s, then all of them in order
		r.watchStall.Store(time.Now().Add(time.Duration(300+w.intn(1200)) * time.Millisecond).UnixNano())
		return "stall the watch of " + r.id
	default: // Lease calls fail for a while: handled by the reactors' odds
		return "nothing"
	}
}

// run plays one schedule: three replicas, a fault every 100-500 ms for
// scheduleTime, then a settle; it returns what it did.
func (w *world) run() []string {
	live := map[string]*replica{}
	next := 0
	for range 3 {
		next++
		id := "r" + strconv.Itoa(next)
		live[id] = w.start(id)
	}
	lagDone := make(chan struct{})
	go w.watchLag(lagDone)
	var did []string
	for end := time.Now().Add(*faultTime); time.Now().Before(end); {
		time.Sleep(time.Duration(100+w.intn(400)) * time.Millisecond)
		if len(live) < 2 {
			next++
			id := "r" + strconv.Itoa(next)
			live[id] = w.start(id)
			did = append(did, "start "+id)
			w.tl.add("fault: start %s", id)
			continue
		}
		f := w.fault(live, &next)
		w.tl.add("fault: %s", f)
		did = append(did, f)
	}
	time.Sleep(2 * leaseDuration)
	close(lagDone)
	for _, r := range live {
		r.stop()
	}
	return did
}

// TestFaultSchedules runs random fault schedules over the real leader
// and write path: no scale write lands while the API server's Lease of
// its bucket names another replica, and writes do land.
func TestFaultSchedules(t *testing.T) {
	n := *schedules
	if testing.Short() {
		n = 1
	}
	var idle atomic.Int64
	t.Cleanup(func() {
		// A schedule whose fleet never wrote is a fleet that never decided;
		// one in ten may be a machine too busy for the lease timings (the
		// schedules run on real time, 250 ms renewals), more is not.
		if k := idle.Load(); k > 0 && k*10 > int64(n) {
			t.Errorf("%d of %d schedules landed no write: the fleet never decided (each is logged above)", k, n)
		}
	})
	for k := range n {
		seed := *firstSeed + uint64(k)
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, seed)
			did := w.run()
			if v := w.violations.Load(); v > 0 {
				t.Errorf("%d of %d writes landed while another replica held the bucket; the first: %s\nschedule: %v\ntimeline:\n%s",
					v, w.landed.Load(), w.first, did, w.tl.around(w.firstAt, 3*time.Second, 200*time.Millisecond, w.firstKeys...))
			}
			if lag := w.lag.Load(); w.landed.Load() == 0 && time.Duration(lag) > maxLag {
				t.Logf("no write landed, on a machine too busy to judge it: a 10 ms timer fired up to %v late", time.Duration(lag))
			} else if w.landed.Load() == 0 {
				idle.Add(1)
				t.Logf("no write landed: the fleet never decided (schedule: %v)\ntimeline:\n%s", did,
					w.tl.around(0, 0, time.Hour, "fault", "took", "lost", "let", "holding", "failed"))
			}
			if n := w.starved.Load(); n > 0 {
				t.Logf("%d writes landed on another's term, read by the server more than %v (the margin) after their last check as they left, "+
					"on a machine where a 10 ms timer fired %v late: beyond the bound's assumption, not judged", n, margin, time.Duration(w.lag.Load()))
			}
			t.Logf("%d writes landed; schedule: %v", w.landed.Load(), did)
		})
	}
}
