// Package injecttest checks a pod after the sidecar injection as the API
// server, the kubelet and the queue-proxy would: Apply applies a patch the
// way the API server applies a mutating webhook's, Problems lists what of
// a pod would be refused or collide, Lost lists the fields a patch dropped
// or changed that it had no business with, and Sidecar loads the injected
// queue-proxy's environment with the queue-proxy's own loader. Tests only.
package injecttest

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/queueproxy"
)

// Apply applies a JSON patch (RFC 6902) to a JSON document as the API
// server's mutating admission does: the same library, decoded then applied.
func Apply(doc, patch []byte) ([]byte, error) {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, fmt.Errorf("decoding the patch: %w", err)
	}
	out, err := p.Apply(doc)
	if err != nil {
		return nil, fmt.Errorf("applying the patch: %w", err)
	}
	return out, nil
}

// Problems are what of pod the API server refuses or warns about, or
// what would collide at run time, each naming the field:
//
//   - container names unique across containers and init containers;
//   - every port within [1, 65535] (host ports [0, 65535]), a known
//     protocol, a valid name; no port and protocol declared twice across
//     containers and init containers (native sidecars included: the API
//     server warns, and two listeners on one port collide);
//   - a probe that names a port names one of its container's;
//   - a preStop sleep within the grace period, and a grace period >= 0;
//   - a variable defined twice in one container.
func Problems(pod *corev1.Pod) []string {
	var out []string
	names := map[string]string{}
	ports := map[string]string{}
	visit := func(kind string, cs []corev1.Container) {
		for i, c := range cs {
			at := fmt.Sprintf("spec.%s[%d]", kind, i)
			if prev, dup := names[c.Name]; dup {
				out = append(out, fmt.Sprintf("%s.name: %q duplicates %s", at, c.Name, prev))
			}
			names[c.Name] = at
			out = append(out, portProblems(c, at, ports)...)
			out = append(out, probeProblems(c, at)...)
			out = append(out, envProblems(c, at)...)
		}
	}
	visit("initContainers", pod.Spec.InitContainers)
	visit("containers", pod.Spec.Containers)
	grace := int64(30) // the API server's default
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
		if grace < 0 {
			out = append(out, fmt.Sprintf("spec.terminationGracePeriodSeconds: %d is negative", grace))
		}
	}
	for i, c := range pod.Spec.Containers {
		if l := c.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
			if s := l.PreStop.Sleep.Seconds; s < 0 || s > grace {
				out = append(out, fmt.Sprintf("spec.containers[%d].lifecycle.preStop.sleep.seconds: %d is not within [0, %d], the grace period", i, s, grace))
			}
		}
	}
	return out
}

func portProblems(c corev1.Container, at string, seen map[string]string) []string {
	var out []string
	for i, p := range c.Ports {
		pat := fmt.Sprintf("%s.ports[%d]", at, i)
		if p.ContainerPort < 1 || p.ContainerPort > 65535 || p.HostPort < 0 || p.HostPort > 65535 {
			out = append(out, fmt.Sprintf("%s: containerPort %d, hostPort %d out of range", pat, p.ContainerPort, p.HostPort))
		}
		switch p.Protocol {
		case "", corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			out = append(out, fmt.Sprintf("%s.protocol: %q unknown", pat, p.Protocol))
		}
		if p.Name != "" && len(validation.IsValidPortName(p.Name)) > 0 {
			out = append(out, fmt.Sprintf("%s.name: %q invalid", pat, p.Name))
		}
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		key := fmt.Sprintf("%d/%s", p.ContainerPort, proto)
		if prev, dup := seen[key]; dup {
			out = append(out, fmt.Sprintf("%s: port %s also declared at %s", pat, key, prev))
		}
		seen[key] = pat
	}
	return out
}

func probeProblems(c corev1.Container, at string) []string {
	var out []string
	for _, probe := range []struct {
		name string
		p    *corev1.Probe
	}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}} {
		var named []string
		if p := probe.p; p != nil && p.HTTPGet != nil && p.HTTPGet.Port.Type == intstr.String {
			named = append(named, p.HTTPGet.Port.StrVal)
		}
		if p := probe.p; p != nil && p.TCPSocket != nil && p.TCPSocket.Port.Type == intstr.String {
			named = append(named, p.TCPSocket.Port.StrVal)
		}
		for _, port := range named {
			if !hasPortNamed(c, port) {
				out = append(out, fmt.Sprintf("%s.%s: port %q is not a port of the container", at, probe.name, port))
			}
		}
	}
	return out
}

func hasPortNamed(c corev1.Container, name string) bool {
	for _, p := range c.Ports {
		if p.Name == name {
			return true
		}
	}
	return false
}

func envProblems(c corev1.Container, at string) []string {
	var out []string
	seen := map[string]int{}
	for i, e := range c.Env {
		if prev, dup := seen[e.Name]; dup {
			out = append(out, fmt.Sprintf("%s.env[%d]: %s also defined at env[%d]", at, i, e.Name, prev))
		}
		seen[e.Name] = i
	}
	return out
}

// Sidecar loads the queue-proxy container's environment of an injected
// pod with the queue-proxy's own loader (valueFrom fields filled in, the
// optional secret left unset, $(VAR) references expanded as the kubelet
// does), and checks what the pod must agree on with it: the app's
// (spec.containers[app]) PORT is USER_PORT, and the grace period covers
// the drain and the request timeout. It returns the problems; none when
// the pod has no sidecar.
func Sidecar(pod *corev1.Pod, app int) []string {
	var qp *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == config.QueueProxyContainer {
			qp = &pod.Spec.Containers[i]
		}
	}
	if qp == nil {
		return nil
	}
	env := resolve(qp.Env)
	c, err := queueproxy.Load(nil, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		return []string{"the queue-proxy refuses its environment: " + err.Error()}
	}
	var out []string
	if port := resolve(pod.Spec.Containers[app].Env)["PORT"]; port != strconv.Itoa(c.UserPort) {
		out = append(out, fmt.Sprintf("spec.containers[%d].env: PORT=%q, USER_PORT=%d", app, port, c.UserPort))
	}
	need := int64(math.Ceil((c.RequestTimeout + c.DrainPeriod).Seconds()))
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || *g < need {
		out = append(out, fmt.Sprintf("spec.terminationGracePeriodSeconds: %v, below the drain plus the request timeout (%ds)", g, need))
	}
	return out
}

var ref = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// resolve is the environment a container's process sees, for the fields a
// sidecar sets: literal values with $(VAR) of earlier variables expanded,
// fieldRefs as the downward API fills them, optional secrets absent.
func resolve(vars []corev1.EnvVar) map[string]string {
	env := map[string]string{}
	for _, e := range vars {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = ref.ReplaceAllStringFunc(e.Value, func(m string) string {
				if v, ok := env[m[2:len(m)-1]]; ok {
					return v
				}
				return m
			})
		case e.ValueFrom.FieldRef != nil:
			env[e.Name] = strings.ReplaceAll(e.ValueFrom.FieldRef.FieldPath, ".", "-")
		}
	}
	return env
}

// Lost lists the leaves of the JSON document before (a pod) that after
// does not hold with the same value, except those an injection may
// change: the app container's (spec.containers[app]) ports and readiness
// probe, which move into the queue-proxy, the port of a probe that named
// the app's port, and a grace period that may only grow. Arrays may grow
// at their end (env, containers).
func Lost(before, after []byte, app int) ([]string, error) {
	var b, a any
	if err := json.Unmarshal(before, &b); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(after, &a); err != nil {
		return nil, err
	}
	var out []string
	walk("", b, a, app, &out)
	return out, nil
}

func walk(path string, b, a any, app int, out *[]string) {
	if changeable(path, b, a, app) {
		return
	}
	switch bv := b.(type) {
	case map[string]any:
		am, ok := a.(map[string]any)
		if !ok {
			*out = append(*out, path+": no longer an object")
			return
		}
		for k, v := range bv {
			av, ok := am[k]
			if !ok {
				if !changeable(path+"/"+k, v, nil, app) {
					*out = append(*out, path+"/"+k+": lost")
				}
				continue
			}
			walk(path+"/"+k, v, av, app, out)
		}
	case []any:
		aa, ok := a.([]any)
		if !ok || len(aa) < len(bv) {
			*out = append(*out, path+": no longer an array of at least its length")
			return
		}
		for i, v := range bv {
			walk(path+"/"+strconv.Itoa(i), v, aa[i], app, out)
		}
	default:
		if !reflect.DeepEqual(b, a) {
			*out = append(*out, fmt.Sprintf("%s: %v became %v", path, b, a))
		}
	}
}

func changeable(path string, b, a any, app int) bool {
	at := "/spec/containers/" + strconv.Itoa(app)
	switch {
	case path == at+"/ports", path == at+"/readinessProbe":
		return true
	case path == "/spec/terminationGracePeriodSeconds":
		bn, _ := b.(float64)
		an, ok := a.(float64)
		return ok && an >= bn
	}
	for _, probe := range []string{"/livenessProbe", "/startupProbe", "/readinessProbe"} {
		for _, h := range []string{"/httpGet/port", "/tcpSocket/port"} {
			if path == at+probe+h {
				_, named := b.(string)
				_, number := a.(float64)
				return named && number
			}
		}
	}
	return false
}
