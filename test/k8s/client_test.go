//go:build k8s

package k8s

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
)

// routeClient calls a revision's Service as a client-side load balancer
// would (the testbed has no kube-proxy): round robin over the ready
// addresses of the Service's EndpointSlices, refreshed every 100ms, with
// the Service's DNS name as Host (the activator routes by it).
type routeClient struct {
	host string
	http *http.Client

	mu    sync.Mutex // guards addrs and next
	addrs []string
	next  int
}

func newRouteClient(t *testing.T, c kubernetes.Interface, ns, svc string) *routeClient {
	t.Helper()
	r := &routeClient{host: svc + "." + ns + ".svc.cluster.local",
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 5 * time.Second}}}
	ctx, cancel := context.WithCancel(context.Background())
	if addrs, err := serviceAddrs(ctx, c, ns, svc); err == nil {
		r.addrs = addrs
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			if addrs, err := serviceAddrs(ctx, c, ns, svc); err == nil {
				r.mu.Lock()
				r.addrs = addrs
				r.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		r.http.CloseIdleConnections()
	})
	return r
}

func (r *routeClient) pick() (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.addrs) == 0 {
		return "", false
	}
	r.next++
	return r.addrs[r.next%len(r.addrs)], true
}

// get sends one request and returns the status and the address used.
// A connection refused is tried again on the next address, for up to
// refusedFor: kwok marks a pod Ready as soon as it is bound, before the
// test kubelet has its processes listening (a real kubelet waits for the
// readiness probe), and the test kubelet stops listening on a pod's
// address as the pod goes, before the EndpointSlice may say so. A
// refused connection carried no request, so nothing of Ebb's is lost.
func (r *routeClient) get(ctx context.Context) (int, string, error) {
	deadline := time.Now().Add(refusedFor)
	for {
		code, addr, err := r.getOnce(ctx)
		if !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) || ctx.Err() != nil {
			return code, addr, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// refusedFor bounds get's retries of refused connections.
const refusedFor = 3 * time.Second

func (r *routeClient) getOnce(ctx context.Context) (int, string, error) {
	addr, ok := r.pick()
	if !ok {
		return 0, "", fmt.Errorf("Service %s has no ready endpoint", r.host)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return 0, addr, err
	}
	req.Host = r.host
	resp, err := r.http.Do(req)
	if err != nil {
		return 0, addr, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, addr, err
}

// loadResult counts what a load run saw.
type loadResult struct {
	ok, failed atomic.Int64 // 200s; errors and other statuses
	mu         sync.Mutex
	first      string // the first failure
}

func (l *loadResult) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%d ok, %d failed (first: %s)", l.ok.Load(), l.failed.Load(), l.first)
}

// runLoad starts conc clients sending requests back to back; the returned
// func stops them and waits for them. A request in flight when the load
// stops is not counted.
func (r *routeClient) runLoad(conc int) (*loadResult, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	res := &loadResult{}
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for ctx.Err() == nil {
				code, addr, err := r.get(ctx)
				switch {
				case ctx.Err() != nil:
				case err == nil && code == http.StatusOK:
					res.ok.Add(1)
				default:
					res.failed.Add(1)
					res.mu.Lock()
					if res.first == "" {
						res.first = fmt.Sprintf("%s: status %d, error %v", addr, code, err)
					}
					res.mu.Unlock()
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	return res, func() { cancel(); wg.Wait() }
}
