package inject

import (
	"fmt"
	"math"
	"strconv"
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

// DefaultPort is the app's port when its container declares none and sets
// no PORT: Knative's default.
const DefaultPort = 8080

// envPort is the app's variable of its port, as in Knative.
const envPort = "PORT"

// Pod returns the patch that adds the queue-proxy to in.Pod, or an error
// naming the field to fix. The same pod and settings give the same patch.
func Pod(in Input, s Settings) (Result, error) {
	pod := in.Pod
	for _, c := range pod.Spec.Containers {
		if c.Name == ContainerName {
			return Result{}, nil // injected already, or wired by hand
		}
	}
	i, err := appContainer(pod.Spec.Containers)
	if err != nil {
		return Result{}, err
	}
	app := *pod.Spec.Containers[i].DeepCopy()
	w, err := readApp(app, i, pod.Annotations, s)
	if err != nil {
		return Result{}, err
	}
	var res Result
	qp, warn := sidecar(w, app, in, s)
	res.Warnings = append(res.Warnings, warn...)
	res.Warnings = append(res.Warnings, rewireApp(&app, i, w, s)...)
	res.Patch = []Operation{
		{Op: "replace", Path: fmt.Sprintf("/spec/containers/%d", i), Value: app},
		{Op: "add", Path: "/spec/containers/-", Value: qp},
	}
	grace := graceSeconds(w.timeout, s.DrainPeriod)
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || *g < grace {
		res.Patch = append(res.Patch, Operation{Op: "add", Path: "/spec/terminationGracePeriodSeconds", Value: grace})
	}
	return res, nil
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

// wiring is what the app container and the annotations say.
type wiring struct {
	field       string // the app container's path, spec.containers[i]
	port        int32
	portName    string
	setPort     bool // the app has no PORT: add it
	concurrency int32
	upstream    string
	timeout     time.Duration // REVISION_TIMEOUT_SECONDS (the grace period covers it)
	timeouts    []corev1.EnvVar
}

func readApp(c corev1.Container, i int, ann map[string]string, s Settings) (wiring, error) {
	field := fmt.Sprintf("spec.containers[%d]", i)
	w := wiring{field: field, port: DefaultPort, timeout: config.DefaultRevisionTimeout}
	if len(c.Ports) > 1 {
		return w, fmt.Errorf("%s.ports: container %q declares %d ports; the queue-proxy fronts one: keep only the port the app serves on",
			field, c.Name, len(c.Ports))
	}
	env, hasEnv := literalEnv(c.Env, envPort)
	switch {
	case len(c.Ports) == 1:
		w.port, w.portName = c.Ports[0].ContainerPort, c.Ports[0].Name
		if hasEnv && env != strconv.Itoa(int(w.port)) {
			return w, fmt.Errorf("%s.env: PORT=%q but ports[0].containerPort is %d: remove PORT (Ebb sets it from the port) or make them equal",
				field, env, w.port)
		}
		w.setPort = !hasEnv
	case hasEnv:
		n, err := strconv.ParseInt(env, 10, 32)
		if err != nil || n < 1 || n > 65535 {
			return w, fmt.Errorf("%s.env: PORT=%q is not a port: set a number within [1, 65535], or declare ports: [{containerPort: N}]", field, env)
		}
		w.port = int32(n)
	default:
		w.setPort = true
	}
	if w.port == s.ServingPort || w.port == s.AdminPort {
		return w, fmt.Errorf("%s: the app's port %d is reserved for the queue-proxy (%d serves, %d is its admin port): move the app to another port, e.g. 8080",
			field, w.port, s.ServingPort, s.AdminPort)
	}
	if raw, ok := ann[config.AnnotationContainerConcurrency]; ok {
		cc, err := config.ParseContainerConcurrency(raw)
		if err != nil {
			return w, fmt.Errorf("metadata.annotations: %w", err)
		}
		w.concurrency = cc
	}
	proto, perr := config.ParseUpstreamProtocol(ann[config.AnnotationUpstreamProtocol])
	if perr != nil {
		return w, fmt.Errorf("metadata.annotations: %w", perr)
	}
	w.upstream = config.ResolveUpstreamProtocol(proto, w.portName)
	return w, readTimeouts(&w, c, field)
}

// readTimeouts copies the app's literal timeout variables (Knative's
// timeoutSeconds, responseStartTimeoutSeconds, idleTimeoutSeconds) to the
// sidecar; the activator reads REVISION_TIMEOUT_SECONDS from the pod
// template's containers too.
func readTimeouts(w *wiring, c corev1.Container, field string) error {
	for _, name := range []string{config.EnvRevisionTimeout, config.EnvResponseStartTimeout, config.EnvIdleTimeout} {
		v, ok := literalEnv(c.Env, name)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 3600 || (name == config.EnvRevisionTimeout && f == 0) {
			return fmt.Errorf("%s.env: %s=%q: must be seconds within (0, 3600]: fix the value or remove it (default %s)",
				field, name, v, config.DefaultRevisionTimeout)
		}
		if name == config.EnvRevisionTimeout {
			w.timeout = time.Duration(f * float64(time.Second))
		}
		w.timeouts = append(w.timeouts, corev1.EnvVar{Name: name, Value: v})
	}
	if len(w.timeouts) == 0 || w.timeouts[0].Name != config.EnvRevisionTimeout {
		def := corev1.EnvVar{Name: config.EnvRevisionTimeout, Value: strconv.Itoa(int(config.DefaultRevisionTimeout / time.Second))}
		w.timeouts = append([]corev1.EnvVar{def}, w.timeouts...)
	}
	return nil
}

// literalEnv is the value of a variable set as a literal (not valueFrom).
func literalEnv(env []corev1.EnvVar, name string) (string, bool) {
	for _, e := range env {
		if e.Name == name && e.ValueFrom == nil {
			return e.Value, true
		}
	}
	return "", false
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
