//go:build k8s

package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/autoscaler/bucket"
	"ebb.dev/ebb/pkg/autoscaler/fleetapi"
	"ebb.dev/ebb/pkg/platform/kubernetes/cluster"
)

// buckets is deploy/kubernetes/autoscaler.yaml's --buckets.
const buckets = bucket.DefaultCount

// fleetView is the autoscaler fleet as its Leases say: each bucket's
// holder ("" when free) and the replicas.
type fleetView struct {
	holders  []string
	replicas map[string]cluster.Replica
}

func (v fleetView) String() string {
	return fmt.Sprintf("holders %v, replicas %d", v.holders, len(v.replicas))
}

// load is how many buckets each replica holds.
func (v fleetView) load() map[string]int {
	out := map[string]int{}
	for _, h := range v.holders {
		if h != "" {
			out[h]++
		}
	}
	return out
}

func readFleet(ctx context.Context) (fleetView, error) {
	v := fleetView{holders: make([]string, buckets), replicas: map[string]cluster.Replica{}}
	ls, err := env.client.CoordinationV1().Leases(ebbNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return v, err
	}
	for i := range ls.Items {
		l := &ls.Items[i]
		if b, n, h, ok := cluster.ReadBucket(autoscalerName, l); ok && n == buckets {
			v.holders[b] = h
		} else if r, ok := cluster.ReadReplica(autoscalerName, l); ok {
			v.replicas[r.Identity] = r
		}
	}
	return v, nil
}

// waitBalanced waits until the buckets are held by exactly the replicas
// running (the Deployment's pods), each holding n/m or one more.
func waitBalanced(t *testing.T, ctx context.Context, timeout time.Duration, pods []string) fleetView {
	t.Helper()
	var v fleetView
	waitFor(t, timeout, fmt.Sprintf("the %d buckets balanced over %v", buckets, pods), func() (bool, string) {
		var err error
		if v, err = readFleet(ctx); err != nil {
			return false, err.Error()
		}
		return balanced(v, pods), v.String()
	})
	return v
}

func balanced(v fleetView, pods []string) bool {
	load := v.load()
	if len(load) != len(pods) {
		return false
	}
	for _, p := range pods {
		if n := load[p]; n < buckets/len(pods) || n > buckets/len(pods)+1 {
			return false
		}
	}
	return !slices.Contains(v.holders, "")
}

// autoscalerPods are the names of the autoscaler's pods not being
// deleted, sorted.
func autoscalerPods(ctx context.Context) ([]string, error) {
	pods, err := env.client.CoreV1().Pods(ebbNS).List(ctx, metav1.ListOptions{LabelSelector: "app=" + autoscalerName})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ownerOf is the replica that holds a revision's bucket.
func ownerOf(ctx context.Context, ns, name string) (string, fleetView, error) {
	v, err := readFleet(ctx)
	if err != nil {
		return "", v, err
	}
	return v.holders[bucket.Of(ns+"/"+name, buckets)], v, nil
}

// ownerProcess is the replica that decides for a revision, and its
// autoscaler process.
func ownerProcess(t *testing.T, ctx context.Context, ns, name string) (string, *proc) {
	t.Helper()
	owner, v, err := ownerOf(ctx, ns, name)
	if err != nil || owner == "" {
		t.Fatalf("owner of %s/%s: %q (%v); %s", ns, name, owner, err, v)
	}
	p := env.kubelet.process(ebbNS, owner, "autoscaler")
	if p == nil {
		t.Fatalf("no process for %s, the owner of %s/%s", owner, ns, name)
	}
	return owner, p
}

// waitNewOwner waits for a replica other than old to hold the
// revision's bucket.
func waitNewOwner(t *testing.T, ctx context.Context, ns, name, old string) string {
	t.Helper()
	var owner string
	waitFor(t, leaseDuration+5*time.Second, "a new owner of "+ns+"/"+name, func() (bool, string) {
		var v fleetView
		owner, v, _ = ownerOf(ctx, ns, name)
		return owner != "" && owner != old, v.String()
	})
	return owner
}

// replicaStatuses asks one replica for the revisions it decides for.
func replicaStatuses(ctx context.Context, r cluster.Replica) ([]autoscaler.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Admin+"/revisions?scope="+fleetapi.LocalScope, nil)
	req.Header.Set(fleetapi.ForwardedHeader, "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /revisions from %s: %s", r.Identity, resp.Status)
	}
	var out []autoscaler.Status
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

// decidedAt is the time of a status's last decision (a run of like
// decisions is folded into one).
func decidedAt(s autoscaler.Status) time.Time {
	if !s.Until.IsZero() {
		return s.Until
	}
	return s.Time
}

// revisionInBucket is a name whose revision in ns falls in bucket b.
func revisionInBucket(ns, prefix string, b int) string {
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if bucket.Of(ns+"/"+name, buckets) == b {
			return name
		}
	}
}
