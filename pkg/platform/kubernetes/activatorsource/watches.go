package activatorsource

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// The resources the source watches (their plural names in the API).
const (
	deployments    = "deployments"
	pods           = "pods"
	endpointSlices = "endpointslices"
	leases         = "leases"
)

// Watches opens the list-watch of one resource (Deployments, Pods,
// endpointSlices or Leases) in namespace ("" for all), the list options narrowed by
// opts. NewRESTWatches opens them on a cluster; tests give fakes.
type Watches func(resource, namespace string, opts func(*metav1.ListOptions)) cache.ListerWatcher

// groups maps each resource to its API group version and path.
var groups = map[string]struct {
	gv      schema.GroupVersion
	apiPath string
	add     func(*runtime.Scheme) error
}{
	pods:           {corev1.SchemeGroupVersion, "/api", corev1.AddToScheme},
	deployments:    {appsv1.SchemeGroupVersion, "/apis", appsv1.AddToScheme},
	endpointSlices: {discoveryv1.SchemeGroupVersion, "/apis", discoveryv1.AddToScheme},
	leases:         {coordinationv1.SchemeGroupVersion, "/apis", coordinationv1.AddToScheme},
}

// NewRESTWatches returns Watches on the cluster cfg points at: one REST
// client per group, sharing one HTTP client, decoding with a scheme of
// these four groups only.
func NewRESTWatches(cfg *rest.Config) (Watches, error) {
	scheme := runtime.NewScheme()
	// The unversioned meta types (ListOptions, WatchEvent, Status).
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	for _, g := range groups {
		if err := g.add(scheme); err != nil {
			return nil, fmt.Errorf("kubernetes scheme %s: %w", g.gv, err)
		}
	}
	codecs := serializer.NewCodecFactory(scheme).WithoutConversion()
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes HTTP client: %w", err)
	}
	clients := map[string]*rest.RESTClient{}
	for res, g := range groups {
		c := rest.CopyConfig(cfg)
		c.GroupVersion, c.APIPath, c.NegotiatedSerializer = &g.gv, g.apiPath, codecs
		if c.UserAgent == "" {
			c.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		if clients[res], err = rest.RESTClientForConfigAndClient(c, httpClient); err != nil {
			return nil, fmt.Errorf("kubernetes client for %s: %w", g.gv, err)
		}
	}
	return func(resource, namespace string, opts func(*metav1.ListOptions)) cache.ListerWatcher {
		c, ok := clients[resource]
		if !ok {
			panic("activatorsource: no client for resource " + resource)
		}
		if opts == nil {
			opts = func(*metav1.ListOptions) {}
		}
		return cache.NewFilteredListWatchFromClient(c, resource, namespace, opts)
	}, nil
}
