// Package cluster is what both of Ebb's Kubernetes programs read from a
// cluster in the same way: how to reach the API server (RESTConfig), the
// label that makes a Deployment a revision and the annotations and
// environment it carries, which pods serve, and which activators are
// ready.
//
// # What it must not do
//
// It imports no clientset (k8s.io/client-go/kubernetes) and no informer
// factory (k8s.io/client-go/informers): those register every API group at
// start, which the activator, a front door that must stay small at idle,
// does not pay for. Its users are the autoscaler's platform
// (pkg/platform/kubernetes) and the activator's lean source
// (pkg/platform/kubernetes/activatorsource). It holds no state and starts
// nothing.
package cluster
