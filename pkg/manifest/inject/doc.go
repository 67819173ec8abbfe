// Package inject builds the JSON patch that adds Ebb's queue-proxy sidecar
// to a pod of an opted-in Deployment: what deploy/kubernetes/example-app.yaml
// once wired by hand (the long form in docs/kubernetes.md).
//
// It owns the rules of the sidecar (ports, environment, readiness, drain
// timing, security context) and nothing else: it is pure (a pod and
// Settings in, a deterministic patch out), reads no clock, serves nothing.
// pkg/platform/kubernetes/webhook serves it as a mutating admission webhook.
//
// The patch changes only the fields it must, each by its own operation, so
// a field of the pod that Ebb does not know is never dropped. What it takes
// out of the pod spec (the app's port) it first checks as the API server
// would, which then no longer sees it.
//
// A pod that already has a container named queue-proxy is left alone, so
// injection is idempotent. A pod whose spec Ebb cannot wire (no app
// container, two candidates, a port taken by another container or a native
// sidecar, a port the API server would refuse, hostNetwork, a PORT or a
// timeout the queue-proxy could not read, a bad annotation) is refused
// with an error naming the field, the value and the fix, as Istio's and
// Knative's webhooks refuse what they cannot inject or validate: a
// revision pod that ran without its sidecar could not be routed or scaled
// from zero.
package inject
