package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	grpcstatus "google.golang.org/grpc/status"

	"ebb.dev/ebb/internal/grpcsample"
	"ebb.dev/ebb/pkg/autoscaler"
)

// e2eGRPCRevision is the gRPC sample app (deploy/local/grpchello) as the
// revision "hello" (the name startEbb waits for).
func e2eGRPCRevision(bin string) string {
	return e2eDeployment(map[string]string{"autoscaling.knative.dev/target": "5",
		"autoscaling.knative.dev/target-utilization-percentage": "100", "autoscaling.knative.dev/max-scale": "8"},
		e2eContainer("hello", filepath.Join(bin, "grpchello"), "--latency=50ms", "--startup-delay=200ms")+
			"          ports: [{name: h2c, containerPort: 8080}]\n")
}

// grpcLoad has n callers call Hello back to back for d; it returns the
// calls by status code. It never touches t (it runs in goroutines).
func grpcLoad(cc *grpc.ClientConn, n int, d time.Duration) map[codes.Code]int {
	var mu sync.Mutex
	got := map[codes.Code]int{}
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for time.Now().Before(end) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				_, err := grpcsample.Hello(ctx, cc, fmt.Sprint(i))
				cancel()
				mu.Lock()
				got[grpcstatus.Code(err)]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return got
}

// TestEndToEndGRPCScaleCycle: the gRPC sample app, through the activator
// and the queue-proxies over h2c: the first call at zero waits for a
// replica and succeeds, calls under load scale it up with every call OK,
// and it goes back to zero after the load.
func TestEndToEndGRPCScaleCycle(t *testing.T) {
	e := startEbb(t, map[string]string{"config.yaml": e2eConfig, "hello.yaml": e2eGRPCRevision(binaries(t))})
	if st := e.status(t); st.Desired != 0 {
		t.Fatalf("revision starts with %d replicas, want 0 (initial-scale 0)", st.Desired)
	}
	cc, err := grpc.NewClient(e.front, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("hello.default.localhost"))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got, err := grpcsample.Hello(ctx, cc, "cold"); err != nil || got != "hello, cold" {
		t.Fatalf("first call at zero: %q, %v", got, err)
	}
	nums, err := grpcsample.Count(ctx, cc, 3)
	if err != nil || len(nums) != 3 {
		t.Fatalf("Count: %v, %v", nums, err)
	}
	// 20 callers on a 50 ms app keep 20 calls in flight: 20 / 5 = 4 pods.
	got := grpcLoad(cc, 20, 10*time.Second)
	st := e.status(t)
	t.Logf("under 20 callers: %v; desired %d, ready %d, stable %.2f", got, st.Desired, st.Ready, st.Stable)
	if len(got) != 1 || got[codes.OK] == 0 {
		t.Fatalf("calls under load by code: %v; want only OK", got)
	}
	if st.Desired < 3 || st.Desired > 6 {
		t.Errorf("desired %d under 20 calls in flight at a target of 5; want about 4 (each stream counts as a request)", st.Desired)
	}
	e.waitFor(t, 30*time.Second, "scale to zero", func(st autoscaler.Status) bool { return st.Desired == 0 && st.Ready == 0 })
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	if _, err := grpcsample.Hello(ctx2, cc, "again"); err != nil {
		t.Errorf("call after scale to zero: %v", err)
	}
}
