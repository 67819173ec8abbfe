package inject

import (
	"fmt"
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/stats"
)

// sidecarUID is the queue-proxy's user: the nonroot user of its image
// (make images: hack/images) and of deploy/.
const sidecarUID = 65532

// sidecar is the queue-proxy container for the app; probe is the app's
// readiness probe when it moves into the queue-proxy (movableProbe).
func sidecar(w wiring, app corev1.Container, probe *corev1.Probe, in Input, s Settings) (corev1.Container, []string) {
	env := []corev1.EnvVar{
		{Name: config.EnvUserPort, Value: strconv.Itoa(int(w.port))},
		{Name: config.EnvQueueServingPort, Value: strconv.Itoa(int(s.ServingPort))},
		{Name: config.EnvQueueAdminPort, Value: strconv.Itoa(int(s.AdminPort))},
		fieldEnv(config.EnvServingPod, "metadata.name"),
		fieldEnv(config.EnvPodNamespace, "metadata.namespace"),
	}
	var warnings []string
	rev, ok := in.Revision, in.Revision != ""
	if !ok {
		rev, ok = revisionOf(in.Pod)
	}
	if ok {
		// Knative's variables with Knative's meanings: the revision's
		// name beside its namespace, its Configuration and Service.
		n := config.NamesOf("", rev, in.Pod.Labels)
		service := n.Service
		if service == config.UnknownName {
			service = "" // no Service owns it: Knative's empty value
		}
		env = append(env, fieldEnv(config.EnvServingNamespace, "metadata.namespace"),
			corev1.EnvVar{Name: config.EnvServingRevision, Value: rev},
			corev1.EnvVar{Name: config.EnvServingConfiguration, Value: n.Configuration},
			corev1.EnvVar{Name: config.EnvServingService, Value: service})
	} else {
		warnings = append(warnings, "metadata.ownerReferences: the pod is not a Deployment's (no controlling ReplicaSet with a pod-template-hash "+
			"label), so its queue-proxy reports no revision: run it from an opted-in Deployment")
	}
	env = append(env, corev1.EnvVar{Name: config.EnvContainerConcurrency, Value: strconv.Itoa(int(w.concurrency))})
	env = append(env, w.timeouts...)
	env = append(env,
		corev1.EnvVar{Name: config.EnvDrainPeriod, Value: strconv.FormatInt(wholeSeconds(s.DrainPeriod), 10)},
		corev1.EnvVar{Name: config.EnvAwaitAppExit, Value: strconv.FormatInt(wholeSeconds(awaitAppExit), 10)},
		corev1.EnvVar{Name: config.EnvUpstreamProtocol, Value: w.upstream})
	env = append(env, probeEnv(probe)...)
	warnings = append(warnings, probeWarnings(app.ReadinessProbe, probe, w)...)
	if s.ProxySecret != "" {
		env = append(env, corev1.EnvVar{Name: stats.ProxySecretEnv, Value: s.ProxySecret})
	} else if s.ProxySecretName != "" {
		env = append(env, corev1.EnvVar{Name: stats.ProxySecretEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.ProxySecretName}, Key: stats.ProxySecretKey, Optional: ptr(true)}}})
	}
	return corev1.Container{
		Name: ContainerName, Image: s.Image, ImagePullPolicy: s.ImagePullPolicy,
		Ports: []corev1.ContainerPort{
			{Name: servingPortName, ContainerPort: s.ServingPort, Protocol: corev1.ProtocolTCP},
			{Name: AdminPortName, ContainerPort: s.AdminPort, Protocol: corev1.ProtocolTCP},
		},
		Env: env,
		// The kubelet's probe is answered from the queue-proxy's own
		// readiness (the app's, probed every 50ms at start), on the admin
		// port: it stays open through a drain, when the serving port closes
		// while its connections finish (a probe refused there was a Warning
		// Unhealthy Event per second of every scale-down).
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: stats.KubeletProbePath, Port: intstr.FromString(AdminPortName)}}, PeriodSeconds: 1},
		Resources:                *s.Resources.DeepCopy(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true), RunAsNonRoot: ptr(true),
			RunAsUser: ptr(int64(sidecarUID)), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}, warnings
}

// appOps are the operations on the app container, each on the one field it
// changes: its port is no longer declared (the Services route to the
// queue-proxy), PORT says where to listen, its readiness is the
// queue-proxy's (when moved), probes that named the port use its number,
// and it outlives the queue-proxy's drain.
func appOps(app corev1.Container, w wiring, moved bool, s Settings) ([]Operation, []string) {
	at := fmt.Sprintf("/spec/containers/%d", w.index)
	var ops []Operation
	if len(app.Ports) > 0 {
		ops = append(ops, Operation{Op: "remove", Path: at + "/ports"})
	}
	if w.setPort {
		port := corev1.EnvVar{Name: config.EnvPort, Value: strconv.Itoa(int(w.port))}
		if len(app.Env) == 0 {
			ops = append(ops, Operation{Op: "add", Path: at + "/env", Value: []corev1.EnvVar{port}})
		} else {
			ops = append(ops, Operation{Op: "add", Path: at + "/env/-", Value: port})
		}
	}
	probes := []struct {
		name string
		p    *corev1.Probe
	}{{"livenessProbe", app.LivenessProbe}, {"startupProbe", app.StartupProbe}, {"readinessProbe", app.ReadinessProbe}}
	if moved {
		ops = append(ops, Operation{Op: "remove", Path: at + "/readinessProbe"})
		probes = probes[:2]
	}
	for _, p := range probes {
		ops = append(ops, numberPort(p.p, w, at+"/"+p.name)...)
	}
	var warnings []string
	switch {
	case s.DrainPeriod <= 0:
	case app.Lifecycle == nil:
		ops = append(ops, Operation{Op: "add", Path: at + "/lifecycle", Value: corev1.Lifecycle{PreStop: drainSleep(s)}})
	case app.Lifecycle.PreStop == nil:
		ops = append(ops, Operation{Op: "add", Path: at + "/lifecycle/preStop", Value: drainSleep(s)})
	default:
		warnings = append(warnings, fmt.Sprintf("%s.lifecycle.preStop: kept; the app should stay up for the queue-proxy's "+
			"drain (%s) before it stops", w.field, s.DrainPeriod))
	}
	return ops, warnings
}

// numberPort replaces the app's port name in a probe (at its path) by its
// number: the name leaves with the container's ports.
func numberPort(p *corev1.Probe, w wiring, at string) []Operation {
	if p == nil || w.portName == "" {
		return nil
	}
	var ops []Operation
	for _, port := range []struct {
		path string
		v    *intstr.IntOrString
	}{{at + "/httpGet/port", httpPort(p)}, {at + "/tcpSocket/port", tcpPort(p)}} {
		if port.v != nil && port.v.Type == intstr.String && port.v.StrVal == w.portName {
			ops = append(ops, Operation{Op: "replace", Path: port.path, Value: intstr.FromInt32(w.port)})
		}
	}
	return ops
}

func httpPort(p *corev1.Probe) *intstr.IntOrString {
	if p.HTTPGet == nil {
		return nil
	}
	return &p.HTTPGet.Port
}

func tcpPort(p *corev1.Probe) *intstr.IntOrString {
	if p.TCPSocket == nil {
		return nil
	}
	return &p.TCPSocket.Port
}

// drainSleep keeps the app up while the queue-proxy drains, and
// drainMargin longer: the queue-proxy takes requests until the end of its
// drain period (on kept-alive connections, and from routes that still
// list the pod), so an app that stopped exactly then would fail the
// last of them (502s seen on a real node when the sleep equalled the
// drain period).
func drainSleep(s Settings) *corev1.LifecycleHandler {
	return &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: wholeSeconds(s.DrainPeriod + drainMargin)}}
}

// drainMargin is how much longer than the queue-proxy's drain period the
// app stays up: the requests it took last finish within it.
const drainMargin = 5 * time.Second

// awaitAppExit is QUEUE_AWAIT_APP_EXIT_SECONDS: after its drain the
// queue-proxy stays up until the app stops (its preStop sleep, drainMargin
// longer than the drain, then its own shutdown), so the kubelet, which
// probes it until the pod's last container stops, never finds it gone.
const awaitAppExit = 3 * drainMargin

func wholeSeconds(d interface{ Seconds() float64 }) int64 { return int64(math.Ceil(d.Seconds())) }

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func ptr[T any](v T) *T { return &v }
