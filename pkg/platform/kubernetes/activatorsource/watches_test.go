package activatorsource

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"ebb.dev/ebb/pkg/config"
)

// apiServer answers one list and one watch event per resource, as the
// API server does in JSON, and records the requests' paths and queries.
func apiServer(t *testing.T) (*httptest.Server, func() []string) {
	var (
		mu   sync.Mutex
		seen []string
	)
	objects := map[string][2]runtime.Object{ // path: list, watched object
		"/apis/apps/v1/deployments": {
			&appsv1.DeploymentList{TypeMeta: metav1.TypeMeta{Kind: "DeploymentList", APIVersion: "apps/v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "1"},
				Items: []appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"}}}},
			&appsv1.Deployment{TypeMeta: metav1.TypeMeta{Kind: "Deployment", APIVersion: "apps/v1"}, ObjectMeta: metav1.ObjectMeta{Name: "bye", Namespace: "default"}}},
		"/api/v1/pods": {
			&corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "hello-1"}}}},
			&corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "hello-2"}}},
		"/apis/discovery.k8s.io/v1/namespaces/ebb-system/endpointslices": {
			&discoveryv1.EndpointSliceList{TypeMeta: metav1.TypeMeta{Kind: "EndpointSliceList", APIVersion: "discovery.k8s.io/v1"},
				Items: []discoveryv1.EndpointSlice{{ObjectMeta: metav1.ObjectMeta{Name: "ebb-activator-x"}}}},
			&discoveryv1.EndpointSlice{TypeMeta: metav1.TypeMeta{Kind: "EndpointSlice", APIVersion: "discovery.k8s.io/v1"},
				ObjectMeta: metav1.ObjectMeta{Name: "ebb-activator-y"}}},
		"/apis/coordination.k8s.io/v1/namespaces/ebb-system/leases": {
			&coordinationv1.LeaseList{TypeMeta: metav1.TypeMeta{Kind: "LeaseList", APIVersion: "coordination.k8s.io/v1"},
				Items: []coordinationv1.Lease{{ObjectMeta: metav1.ObjectMeta{Name: "ebb-autoscaler-bucket-0-of-1"}}}},
			&coordinationv1.Lease{TypeMeta: metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
				ObjectMeta: metav1.ObjectMeta{Name: "ebb-autoscaler-replica-a"}}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		objs, ok := objects[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") != "true" {
			_ = json.NewEncoder(w).Encode(objs[0])
			return
		}
		raw, _ := json.Marshal(objs[1])
		_ = json.NewEncoder(w).Encode(metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: raw}})
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// TestRESTWatchesDecode: the lean scheme decodes lists and watch events
// of the four resources, at their paths, with the options applied.
func TestRESTWatchesDecode(t *testing.T) {
	srv, requests := apiServer(t)
	watches, err := NewRESTWatches(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	sel := func(lo *metav1.ListOptions) { lo.LabelSelector = "a=b" }
	for _, tc := range []struct {
		resource, ns  string
		list, watched string // the names decoded
	}{
		{deployments, "", "hello", "bye"},
		{pods, "", "hello-1", "hello-2"},
		{endpointSlices, config.SystemNamespace, "ebb-activator-x", "ebb-activator-y"},
		{leases, config.SystemNamespace, "ebb-autoscaler-bucket-0-of-1", "ebb-autoscaler-replica-a"},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			lw := cache.ToListerWatcherWithContext(watches(tc.resource, tc.ns, sel))
			list, err := lw.ListWithContext(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			items, err := names(list)
			if diff := cmp.Diff([]string{tc.list}, items); diff != "" || err != nil {
				t.Errorf("list %T (%v): items (-want +got):\n%s", list, err, diff)
			}
			w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			ev := <-w.ResultChan()
			if m, ok := ev.Object.(metav1.Object); !ok || ev.Type != "ADDED" || m.GetName() != tc.watched {
				t.Errorf("watch event %s %T: want ADDED %s", ev.Type, ev.Object, tc.watched)
			}
		})
	}
	want := []string{
		"/apis/apps/v1/deployments?labelSelector=a%3Db", "/apis/apps/v1/deployments?labelSelector=a%3Db&watch=true",
		"/api/v1/pods?labelSelector=a%3Db", "/api/v1/pods?labelSelector=a%3Db&watch=true",
		"/apis/discovery.k8s.io/v1/namespaces/ebb-system/endpointslices?labelSelector=a%3Db",
		"/apis/discovery.k8s.io/v1/namespaces/ebb-system/endpointslices?labelSelector=a%3Db&watch=true",
		"/apis/coordination.k8s.io/v1/namespaces/ebb-system/leases?labelSelector=a%3Db",
		"/apis/coordination.k8s.io/v1/namespaces/ebb-system/leases?labelSelector=a%3Db&watch=true",
	}
	if diff := cmp.Diff(want, requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// names returns the names of a list's items; it fails on a list of the
// wrong type.
func names(list runtime.Object) ([]string, error) {
	items, err := meta.ExtractList(list)
	var out []string
	for _, i := range items {
		m, err := meta.Accessor(i)
		if err != nil {
			return nil, err
		}
		out = append(out, m.GetName())
	}
	return out, err
}
