// Package activatorsource is the activator's platform on Kubernetes
// (activator.Platform): the opted-in Deployments with their container
// concurrency, load balancing and timeout, their pods' queue-proxy
// addresses (ready or not: the activator probes), the number of ready
// activators and this activator's position among them.
//
// # What it owns
//
// Three informers, each as narrow as the API allows: Deployments by the
// label autoscaling.ebb.dev/enabled=true, every Pod (stripped by
// cluster.PodTransform: pods cannot be selected by their owner's label),
// and the EndpointSlices of the activator's Service in Ebb's namespace.
// Every change rebuilds the whole list of revisions and hands it to the
// activator.
//
// # What it must not do
//
// It must not link the typed clientset (k8s.io/client-go/kubernetes), the
// informer factories (k8s.io/client-go/informers) or their scheme: their
// init registers every API group, about 10 MiB of resident memory the
// activator would carry at idle. It talks to the API server through three
// REST clients with a scheme of core/v1, apps/v1 and discovery/v1 only
// (NewRESTWatches); hack/checkimports fails the build's lint when the
// default-build activator depends on those packages. It writes nothing:
// the autoscaler's platform (pkg/platform/kubernetes) owns every write.
//
// # Concurrency
//
// Source.Watch runs the informers and the one loop that builds the list
// and calls apply; it returns after the informers have stopped. The
// informers' handlers only poke that loop (a channel of one).
package activatorsource
