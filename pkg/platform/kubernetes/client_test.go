package kubernetes

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
	"ebb.dev/ebb/pkg/platform/kubernetes/fence"
)

// apiServer is a fake API server for the scale subresource and Leases:
// it answers each PUT with the object it was sent, after scaleDelay for
// a scale, and records the scales that landed.
type apiServer struct {
	*httptest.Server
	scaleDelay time.Duration

	mu      sync.Mutex
	landed  []string // the scales written, by Deployment name
	timeout []string // their timeout parameters
}

func newAPIServer(t *testing.T, scaleDelay time.Duration) *apiServer {
	s := &apiServer{scaleDelay: scaleDelay}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *apiServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", r.Header.Get("Content-Type")) // the object as sent, in its encoding
	switch {
	case r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/scale"):
		time.Sleep(s.scaleDelay)
		s.mu.Lock()
		s.landed = append(s.landed, path.Base(path.Dir(r.URL.Path)))
		s.timeout = append(s.timeout, r.URL.Query().Get("timeout"))
		s.mu.Unlock()
	case r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/leases/"):
	default:
		http.Error(w, "not served", http.StatusNotFound)
		return
	}
	_, _ = w.Write(body)
}

func (s *apiServer) scales() (landed, timeouts []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.landed...), append([]string(nil), s.timeout...)
}

// config is the production rate limits on the fake server.
func (s *apiServer) config() *rest.Config {
	return &rest.Config{Host: s.URL, QPS: cluster.WritesQPS, Burst: cluster.WritesBurst}
}

// openFence is a fence.Keeper of bucket 0 that holds it for left while
// open.
type openFence struct {
	open atomic.Bool
	left time.Duration
}

func (f *openFence) Hold(i int) (time.Duration, func()) {
	if i == 0 && f.open.Load() {
		return f.left, func() {}
	}
	return 0, nil
}

func scale(ctx context.Context, c Clients, name string) error {
	_, err := c.Writes.AppsV1().Deployments("default").UpdateScale(ctx, name,
		&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}},
		metav1.UpdateOptions{})
	return err
}

// queueScales starts n unfenced scale writes at once (a wave of
// revisions waking), and returns a wait for them; ctx stops those still
// waiting in the rate limiter.
func queueScales(ctx context.Context, c Clients, n int) func() {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { _ = scale(ctx, c, "wave") })
	}
	return wg.Wait
}

// TestLeasesNeverWaitBehindWrites: 1,000 scale writes queued at once on
// the writes' client (production rate limits: they drain at 50/s), and
// the Lease renewals made meanwhile on the Lease client each take a
// round trip, not a place in the writes' queue.
func TestLeasesNeverWaitBehindWrites(t *testing.T) {
	srv := newAPIServer(t, time.Millisecond)
	c, err := ClientsFor(srv.config())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := queueScales(ctx, c, 1000)
	defer func() { cancel(); wait() }()
	time.Sleep(300 * time.Millisecond) // the wave is queued
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "ebb-autoscaler-bucket-0-of-1", Namespace: "ebb-system"}}
	var worst time.Duration
	var took []time.Duration
	defer func() { t.Logf("renewals took %v", took) }()
	for range 20 { // 20 renewals, 100 ms apart: 2 s of the 20 s the wave takes
		began := time.Now()
		if _, err := c.Leases.CoordinationV1().Leases("ebb-system").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("renewal: %v", err)
		}
		worst = max(worst, time.Since(began))
		took = append(took, time.Since(began))
		time.Sleep(100 * time.Millisecond)
	}
	// A renewal behind the queue waits about 20 s; a round trip on this
	// machine takes milliseconds (a second is a busy machine's margin).
	if worst > time.Second {
		t.Errorf("the slowest renewal took %v behind 1,000 queued writes, want a round trip", worst)
	}
	if landed, _ := srv.scales(); len(landed) >= 1000 {
		t.Errorf("all %d writes landed within the test: the wave did not queue", len(landed))
	}
}

// TestFenceHoldsAfterTheRateLimiter: a scale checked while the fence is
// open waits in the rate limiter behind a wave of writes; the bucket is
// lost meanwhile. It is checked again as it is sent, and never lands.
func TestFenceHoldsAfterTheRateLimiter(t *testing.T) {
	srv := newAPIServer(t, 0)
	c, err := ClientsFor(srv.config())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := queueScales(ctx, c, 200) // 100 at once (the burst), then 50/s: two seconds' queue
	defer func() { cancel(); wait() }()
	time.Sleep(200 * time.Millisecond) // the wave is queued
	f := &openFence{left: time.Minute}
	f.open.Store(true)
	fenced := fence.For(ctx, f, 0)
	if err := fence.Check(fenced); err != nil {
		t.Fatalf("the fence is closed at the check: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- scale(fenced, c, "late") }()
	time.Sleep(200 * time.Millisecond) // the write waits in the limiter
	f.open.Store(false)                // another replica takes the bucket
	if err := <-done; !errors.Is(err, fence.ErrFenced) {
		t.Errorf("the write delayed past the loss: %v, want ErrFenced", err)
	}
	if landed, _ := srv.scales(); strings.Contains(strings.Join(landed, ","), "late") {
		t.Error("a write checked before the loss landed after it")
	}
}

// TestFenceDeadlineCoversAPause: a write admitted with 300 ms of fence
// left is paused for longer between the check and the wire (a stopped
// process, a slow connection): its deadline has passed, and it is never
// sent. One that is sent carries the fence's time left as the API
// server's timeout.
func TestFenceDeadlineCoversAPause(t *testing.T) {
	srv := newAPIServer(t, 0)
	var pause atomic.Int64
	cfg := srv.config()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { // below the fence: between its check and the wire
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			time.Sleep(time.Duration(pause.Load()))
			return rt.RoundTrip(r)
		})
	})
	c, err := ClientsFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &openFence{left: 300 * time.Millisecond}
	f.open.Store(true)
	ctx := fence.For(context.Background(), f, 0)
	if err := scale(ctx, c, "prompt"); err != nil {
		t.Fatalf("a prompt write: %v", err)
	}
	pause.Store(int64(600 * time.Millisecond))
	if err := scale(ctx, c, "paused"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a write paused past its fence: %v, want its deadline exceeded", err)
	}
	landed, timeouts := srv.scales()
	if strings.Join(landed, ",") != "prompt" {
		t.Errorf("landed %v, want only the prompt write", landed)
	}
	if len(timeouts) == 0 {
		t.Fatal("no write landed")
	}
	if d, err := time.ParseDuration(timeouts[0]); err != nil || d <= 0 || d > 300*time.Millisecond {
		t.Errorf("the API server's timeout %q, want at most the 300ms of fence left", timeouts[0])
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
