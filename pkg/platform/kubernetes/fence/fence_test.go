package fence

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// keeper holds the buckets of left (how long each has left), and counts
// the writes in flight.
type keeper struct {
	left     map[int]time.Duration
	inflight int
}

func (k *keeper) Hold(i int) (time.Duration, func()) {
	l := k.left[i]
	if l <= 0 {
		return 0, nil
	}
	k.inflight++
	return l, func() { k.inflight-- }
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestHold: a claim of several buckets is admitted for the shortest time
// left, refused when any is not held (and then holds none), and its done
// ends every hold once; a context without a claim is not fenced.
func TestHold(t *testing.T) {
	k := &keeper{left: map[int]time.Duration{1: time.Second, 2: 300 * time.Millisecond}}
	left, done, err := hold(For(context.Background(), k, 1, 2))
	if err != nil || left != 300*time.Millisecond || k.inflight != 2 {
		t.Fatalf("Hold = %v, %v; %d in flight: want 300ms, nil, 2", left, err, k.inflight)
	}
	done()
	done()
	if k.inflight != 0 {
		t.Errorf("%d in flight after done (twice), want 0", k.inflight)
	}
	if _, _, err := hold(For(context.Background(), k, 1, 3)); !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "bucket 3") {
		t.Errorf("a claim of an unheld bucket: %v, want ErrFenced naming bucket 3", err)
	}
	if k.inflight != 0 {
		t.Errorf("a refused claim left %d holds", k.inflight)
	}
	if left, _, err := hold(context.Background()); left != 0 || err != nil {
		t.Errorf("no claim: %v, %v; want not fenced", left, err)
	}
	if err := Check(For(context.Background(), nil, 1)); err != nil {
		t.Errorf("a nil keeper: %v, want not fenced", err)
	}
}

// TestTransport: a fenced request goes with the deadline and the API
// server's timeout of its hold and counts in flight until its answer's
// body is closed; a refused one is not sent; an unfenced one passes as
// it is.
func TestTransport(t *testing.T) {
	k := &keeper{left: map[int]time.Duration{1: 2 * time.Second}}
	var sent []*http.Request
	rt := Transport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent = append(sent, r)
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}"))}, nil
	}))
	req, _ := http.NewRequestWithContext(For(context.Background(), k, 1), http.MethodPut, "http://api/apis/x?dryRun=All", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if k.inflight != 1 {
		t.Errorf("%d in flight before the body is closed, want 1", k.inflight)
	}
	got := sent[0]
	if dl, ok := got.Context().Deadline(); !ok || time.Until(dl) > 2*time.Second {
		t.Errorf("deadline %v (%v), want within the 2s left", dl, ok)
	}
	if q := got.URL.Query(); q.Get("timeout") == "" || q.Get("dryRun") != "All" {
		t.Errorf("query %v, want the timeout added and the rest kept", q)
	}
	_ = resp.Body.Close()
	if k.inflight != 0 {
		t.Errorf("%d in flight after the body is closed, want 0", k.inflight)
	}
	req, _ = http.NewRequestWithContext(For(context.Background(), k, 2), http.MethodPut, "http://api/apis/x", nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, ErrFenced) || len(sent) != 1 {
		t.Errorf("a refused request: %v, %d sent; want ErrFenced, not sent", err, len(sent))
	}
	req, _ = http.NewRequestWithContext(context.Background(), http.MethodGet, "http://api/apis/x", nil)
	if _, err := rt.RoundTrip(req); err != nil || len(sent) != 2 || sent[1] != req {
		t.Errorf("an unfenced request: %v, want passed as it is", err)
	}
}

// TestTransportNoAnswer: a fenced request that got no answer (cancelled,
// a broken connection) may still be applied by the API server until its
// timeout: it stays in flight until its deadline.
func TestTransportNoAnswer(t *testing.T) {
	var mu sync.Mutex
	k := &keeper{left: map[int]time.Duration{1: 200 * time.Millisecond}}
	inflight := func() int { mu.Lock(); defer mu.Unlock(); return k.inflight }
	locked := lockedKeeper{mu: &mu, k: k}
	rt := Transport(roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("connection reset") }))
	req, _ := http.NewRequestWithContext(For(context.Background(), locked, 1), http.MethodPut, "http://api/apis/x", nil)
	if _, err := rt.RoundTrip(req); err == nil {
		t.Fatal("want the error")
	}
	if n := inflight(); n != 1 {
		t.Errorf("%d in flight just after a request with no answer, want 1 (until its deadline)", n)
	}
	for deadline := time.Now().Add(5 * time.Second); inflight() != 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	if n := inflight(); n != 0 {
		t.Errorf("%d in flight past the deadline, want 0", n)
	}
}

// lockedKeeper is keeper behind a mutex (its done may run on a timer).
type lockedKeeper struct {
	mu *sync.Mutex
	k  *keeper
}

func (l lockedKeeper) Hold(i int) (time.Duration, func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	left, done := l.k.Hold(i)
	if done == nil {
		return left, nil
	}
	return left, func() { l.mu.Lock(); defer l.mu.Unlock(); done() }
}

// TestTransportLateSend: a request that leaves later than its timeout
// allows (the fence's time left, read again as the client first reads
// the body, is less than the timeout the API server was given) is
// refused there, before its body is sent; one that leaves in time goes
// whole. A body read again for a retry (GetBody) is checked the same.
func TestTransportLateSend(t *testing.T) {
	k := &keeper{left: map[int]time.Duration{1: time.Second}}
	var sent []string
	rt := Transport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Query().Get("timeout") != "500ms" {
			t.Errorf("timeout %q, want 500ms (half of the fence's 1s left)", r.URL.Query().Get("timeout"))
		}
		k.left[1] = 600 * time.Millisecond // the wait for a connection
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		sent = append(sent, string(body))
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}"))}, nil
	}))
	put := func() (*http.Response, error) {
		req, _ := http.NewRequestWithContext(For(context.Background(), k, 1), http.MethodPut, "http://api/apis/x", strings.NewReader("scale"))
		return rt.RoundTrip(req)
	}
	resp, err := put()
	if err != nil || len(sent) != 1 || sent[0] != "scale" {
		t.Fatalf("a request that left in time: %v, sent %q; want it sent whole", err, sent)
	}
	_ = resp.Body.Close()

	rt = Transport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		k.left[1] = 400 * time.Millisecond // waited past the timeout's share
		if body, err := io.ReadAll(r.Body); err == nil {
			sent = append(sent, string(body))
		}
		if r.GetBody != nil {
			if b, err := r.GetBody(); err == nil {
				if _, err := io.ReadAll(b); !errors.Is(err, ErrFenced) {
					t.Errorf("a body read again for a retry: %v, want ErrFenced", err)
				}
			}
		}
		return nil, errors.New("the body could not be read")
	}))
	k.left[1] = time.Second
	if _, err := put(); err == nil || len(sent) != 1 {
		t.Errorf("a request that left too late: %v, sent %q; want refused, its body not sent", err, sent)
	}
}
