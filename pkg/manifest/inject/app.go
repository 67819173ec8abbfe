package inject

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/manifest"
)

// wiring is what the app container and the annotations say.
type wiring struct {
	index       int
	field       string // the app container's path, spec.containers[i]
	port        int32
	portName    string
	setPort     bool // the app has no PORT: add it
	concurrency int32
	upstream    string
	timeout     time.Duration   // REVISION_TIMEOUT_SECONDS (the grace period covers it)
	timeouts    []corev1.EnvVar // the app's timeout variables as written, for the sidecar
}

// readApp reads the app container (spec.containers[i]) and the pod's
// annotations, or says what to fix.
func readApp(pod *corev1.Pod, i int, s Settings) (wiring, error) {
	c := pod.Spec.Containers[i]
	w := wiring{index: i, field: fmt.Sprintf("spec.containers[%d]", i), port: defaultPort, timeout: config.DefaultRevisionTimeout}
	if err := readPort(&w, c); err != nil {
		return w, err
	}
	if w.port == s.ServingPort || w.port == s.AdminPort {
		return w, fmt.Errorf("%s: the app's port %d is reserved for the queue-proxy (%d serves, %d is its admin port): move the app to another port, e.g. 8080",
			w.field, w.port, s.ServingPort, s.AdminPort)
	}
	if err := portsTaken(pod, w, s); err != nil {
		return w, err
	}
	ann := pod.Annotations
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
	return w, readTimeouts(&w, c)
}

// readPort reads the app's port: its one declared port, checked as the API
// server checks it (the port leaves the pod spec, so the API server no
// longer sees it), else its PORT, else Knative's 8080. PORT is read as
// the kubelet applies it (its last definition), and must be a literal:
// the queue-proxy needs the number when the pod is created.
func readPort(w *wiring, c corev1.Container) error {
	if len(c.Ports) > 1 {
		return fmt.Errorf("%s.ports: container %q declares %d ports; the queue-proxy fronts one: keep only the port the app serves on",
			w.field, c.Name, len(c.Ports))
	}
	env, hasEnv := manifest.EnvVar(c.Env, config.EnvPort)
	if hasEnv && env.ValueFrom != nil {
		return fmt.Errorf("%s.env: PORT is set through valueFrom, but the queue-proxy needs the app's port when the pod is created: "+
			"declare ports: [{containerPort: N}] and remove PORT (Ebb sets it), or give PORT the number as its value", w.field)
	}
	if len(c.Ports) == 1 {
		if err := checkPort(c.Ports[0], w.field+".ports[0]"); err != nil {
			return err
		}
		w.port, w.portName = c.Ports[0].ContainerPort, c.Ports[0].Name
		if hasEnv && env.Value != strconv.Itoa(int(w.port)) {
			return fmt.Errorf("%s.env: PORT=%q but ports[0].containerPort is %d: remove PORT (Ebb sets it from the port) or make them equal",
				w.field, env.Value, w.port)
		}
		w.setPort = !hasEnv
		return nil
	}
	if !hasEnv {
		w.setPort = true
		return nil
	}
	n, err := strconv.ParseInt(env.Value, 10, 32)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%s.env: PORT=%q is not a port: set a number within [1, 65535], or declare ports: [{containerPort: N}]", w.field, env.Value)
	}
	w.port = int32(n)
	return nil
}

// checkPort applies the API server's rules to the app's port, and Ebb's:
// the queue-proxy proxies HTTP over TCP, and a hostPort would reach the
// app around it.
func checkPort(p corev1.ContainerPort, at string) error {
	switch {
	case p.ContainerPort < 1 || p.ContainerPort > 65535:
		return fmt.Errorf("%s.containerPort: %d is not a port: must be within [1, 65535] (the API server's rule, which no longer sees the "+
			"port once it moves behind the queue-proxy); set the port the app listens on", at, p.ContainerPort)
	case p.Protocol != "" && p.Protocol != corev1.ProtocolTCP:
		return fmt.Errorf("%s.protocol: %s: the queue-proxy proxies HTTP over TCP: use TCP, or run this app without Ebb "+
			"(remove the label %s from the pod template)", at, p.Protocol, config.LabelEnabled)
	case p.HostPort != 0 || p.HostIP != "":
		return fmt.Errorf("%s.hostPort: %d (hostIP %q) would reach the app around the queue-proxy, uncounted and unlimited: "+
			"remove hostPort and hostIP (the revision's Services route to the queue-proxy)", at, p.HostPort, p.HostIP)
	case p.Name != "":
		if errs := validation.IsValidPortName(p.Name); len(errs) > 0 {
			return fmt.Errorf("%s.name: %q: %s (the API server's rule); fix the name or remove it", at, p.Name, strings.Join(errs, "; "))
		}
	}
	return nil
}

// portsTaken refuses a pod in which another container or an init
// container (a native sidecar runs beside the app; Kubernetes warns about a
// port declared twice in any of them) declares a TCP port that the
// queue-proxy or the app listens on: two listeners on one port in one
// network namespace, one of them failing.
func portsTaken(pod *corev1.Pod, w wiring, s Settings) error {
	owners := map[int32]string{
		s.ServingPort: fmt.Sprintf("the queue-proxy's serving port (%d)", s.ServingPort),
		s.AdminPort:   fmt.Sprintf("the queue-proxy's admin port (%d)", s.AdminPort),
		w.port:        fmt.Sprintf("the app's port (%d, of %s)", w.port, w.field),
	}
	var errs []error
	check := func(kind string, cs []corev1.Container) {
		for ci, c := range cs {
			if kind == "containers" && ci == w.index {
				continue
			}
			for pi, p := range c.Ports {
				owner, taken := owners[p.ContainerPort]
				if !taken || p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
					continue
				}
				errs = append(errs, fmt.Errorf("spec.%s[%d].ports[%d].containerPort: %d is %s: container %q would listen on it too; "+
					"move that container to another port, or the app (its port, or PORT)", kind, ci, pi, p.ContainerPort, owner, c.Name))
			}
		}
	}
	check("initContainers", pod.Spec.InitContainers)
	check("containers", pod.Spec.Containers)
	return errors.Join(errs...)
}

// readTimeouts reads the app's timeout variables (Knative's
// timeoutSeconds, responseStartTimeoutSeconds, idleTimeoutSeconds) by
// their one rule and keeps them as written for the sidecar; the activator
// reads REVISION_TIMEOUT_SECONDS from the pod template's containers too.
func readTimeouts(w *wiring, c corev1.Container) error {
	t, err := manifest.ContainerTimeouts(c, w.field)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range t.OrderErrors() {
		errs = append(errs, fmt.Errorf("%s.env: %w", w.field, e))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if t.Request != nil {
		w.timeout = *t.Request
	}
	for i, v := range [3]*time.Duration{t.Request, t.ResponseStart, t.Idle} {
		if v != nil {
			e, _ := manifest.EnvVar(c.Env, config.TimeoutEnvs[i])
			w.timeouts = append(w.timeouts, corev1.EnvVar{Name: e.Name, Value: e.Value})
		}
	}
	if t.Request == nil {
		def := corev1.EnvVar{Name: config.EnvRevisionTimeout, Value: strconv.Itoa(int(config.DefaultRevisionTimeout / time.Second))}
		w.timeouts = append([]corev1.EnvVar{def}, w.timeouts...)
	}
	return nil
}
