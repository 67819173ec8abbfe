package inject

import (
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"ebb.dev/ebb/pkg/config"
)

// Operation is one RFC 6902 JSON patch operation.
type Operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Result is what injection does to one pod: no operation when the pod
// already has its sidecar, and warnings for the user (the API server shows
// them to kubectl).
type Result struct {
	Patch    []Operation
	Warnings []string
}

// Input is what the webhook knows of a pod being created.
type Input struct {
	// Pod is the pod as the API server sends it (before its name is
	// generated; a ReplicaSet's pod carries its owner reference and its
	// pod-template-hash label).
	Pod *corev1.Pod
	// Revision is the pod's Deployment when the caller knows it (`autoscaler
	// convert --sidecar` injects into a Deployment's template, whose pods
	// have no owner yet); empty: read from the pod's owner reference.
	Revision string
}

// defaultPort is the app's port when its container declares none and sets
// no PORT: Knative's default.
const defaultPort = 8080

// Pod returns the patch that adds the queue-proxy to in.Pod, or an error
// naming the field to fix. The same pod and settings give the same patch.
//
// The patch changes only what it must, each field by its own operation
// (appOps): a field of the pod that Ebb does not know, such as one of a
// newer Kubernetes, is never dropped, as a replace of the whole container
// would drop it.
func Pod(in Input, s Settings) (Result, error) {
	pod := in.Pod
	for _, c := range pod.Spec.Containers {
		if c.Name == ContainerName {
			return Result{}, nil // injected already, or wired by hand
		}
	}
	if err := injectable(pod); err != nil {
		return Result{}, err
	}
	i, err := appContainer(pod.Spec.Containers)
	if err != nil {
		return Result{}, err
	}
	w, err := readApp(pod, i, s)
	if err != nil {
		return Result{}, err
	}
	app := pod.Spec.Containers[i]
	probe := movableProbe(app.ReadinessProbe, w)
	qp, warnings := sidecar(w, app, probe, in, s)
	ops, warn := appOps(app, w, probe != nil, s)
	res := Result{Warnings: append(warnings, warn...)}
	res.Patch = append(ops, Operation{Op: "add", Path: "/spec/containers/-", Value: qp})
	drain := s.DrainPeriod
	if drain > 0 {
		drain += drainMargin // the app's preStop sleep (drainSleep)
	}
	grace := graceSeconds(w.timeout, drain)
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || *g < grace {
		res.Patch = append(res.Patch, Operation{Op: "add", Path: "/spec/terminationGracePeriodSeconds", Value: grace})
	}
	return res, nil
}

// injectable refuses a pod that cannot take the sidecar at all: one on the
// node's network (the queue-proxy's ports would be the node's, and collide
// with every other such pod; Istio's injector leaves such pods alone, but a
// revision's pod without its sidecar could be neither routed nor woken from
// zero), and one whose init container already has the sidecar's name
// (container names are unique across both lists).
func injectable(pod *corev1.Pod) error {
	if pod.Spec.HostNetwork {
		return fmt.Errorf("spec.hostNetwork: true: the queue-proxy's ports would be the node's ports, shared with every pod on the "+
			"node's network: remove hostNetwork, or remove the label %s from the pod template to run it without Ebb", config.LabelEnabled)
	}
	for j, c := range pod.Spec.InitContainers {
		if c.Name == ContainerName {
			return fmt.Errorf("spec.initContainers[%d].name: %q is the name of Ebb's sidecar, and container names are unique in a pod: "+
				"rename the init container", j, c.Name)
		}
	}
	return nil
}

// appContainer is the index of the container the queue-proxy fronts: the
// only container, else the only one that declares a port (Knative's rule:
// exactly one container has a port).
func appContainer(cs []corev1.Container) (int, error) {
	if len(cs) == 1 {
		return 0, nil
	}
	found := -1
	for i, c := range cs {
		if len(c.Ports) == 0 {
			continue
		}
		if found >= 0 {
			return 0, fmt.Errorf("spec.containers: %q and %q both declare ports, so Ebb cannot tell which one the queue-proxy fronts: "+
				"keep ports on the app container only (Knative's rule: exactly one container has a port)", cs[found].Name, c.Name)
		}
		found = i
	}
	if found < 0 {
		return 0, fmt.Errorf("spec.containers: %d containers and none declares a port, so Ebb cannot tell which one the queue-proxy fronts: "+
			"give the app container its port (ports: [{containerPort: 8080}])", len(cs))
	}
	return found, nil
}

// graceSeconds is the pod's termination grace period: the queue-proxy's
// drain, then the longest request (Knative sets it to the revision's
// timeout; the drain comes first in Ebb).
func graceSeconds(timeout, drain time.Duration) int64 {
	return int64(math.Ceil((timeout + drain).Seconds()))
}

// revisionOf is the Deployment a ReplicaSet's pod belongs to: the
// controlling ReplicaSet's name without its "-<pod-template-hash>".
func revisionOf(pod *corev1.Pod) (string, bool) {
	hash := pod.Labels["pod-template-hash"]
	for _, o := range pod.OwnerReferences {
		if o.Kind != "ReplicaSet" || o.Controller == nil || !*o.Controller || hash == "" {
			continue
		}
		if name, ok := strings.CutSuffix(o.Name, "-"+hash); ok && name != "" {
			return name, true
		}
	}
	return "", false
}
