package inject

import (
	"fmt"
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/stats"
)

// sidecarUID is the queue-proxy's user: the distroless nonroot user of
// build/queueproxy.Dockerfile and deploy/.
const sidecarUID = 65532

// sidecar is the queue-proxy container for the app.
func sidecar(w wiring, app corev1.Container, in Input, s Settings) (corev1.Container, []string) {
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
		env = append(env, corev1.EnvVar{Name: config.EnvServingRevision, Value: "$(POD_NAMESPACE)/" + rev})
	} else {
		warnings = append(warnings, "metadata.ownerReferences: the pod is not a Deployment's (no controlling ReplicaSet with a pod-template-hash "+
			"label), so its queue-proxy reports no revision: run it from an opted-in Deployment")
	}
	env = append(env, corev1.EnvVar{Name: config.EnvContainerConcurrency, Value: strconv.Itoa(int(w.concurrency))})
	env = append(env, w.timeouts...)
	env = append(env,
		corev1.EnvVar{Name: config.EnvDrainPeriod, Value: strconv.FormatInt(wholeSeconds(s.DrainPeriod), 10)},
		corev1.EnvVar{Name: config.EnvUpstreamProtocol, Value: w.upstream})
	probeEnv, warn := movedProbe(app.ReadinessProbe, w.field)
	env = append(env, probeEnv...)
	warnings = append(warnings, warn...)
	if s.ProxySecretName != "" {
		env = append(env, corev1.EnvVar{Name: stats.ProxySecretEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.ProxySecretName}, Key: stats.ProxySecretKey, Optional: ptr(true)}}})
	}
	return corev1.Container{
		Name: ContainerName, Image: s.Image, ImagePullPolicy: s.ImagePullPolicy,
		Ports: []corev1.ContainerPort{
			{Name: ServingPortName, ContainerPort: s.ServingPort, Protocol: corev1.ProtocolTCP},
			{Name: AdminPortName, ContainerPort: s.AdminPort, Protocol: corev1.ProtocolTCP},
		},
		Env: env,
		// The kubelet's probe is answered from the queue-proxy's own
		// readiness (the app's, probed every 50ms at start).
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/", Port: intstr.FromString(ServingPortName)}}, PeriodSeconds: 1},
		Resources:                *s.Resources.DeepCopy(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true), RunAsNonRoot: ptr(true),
			RunAsUser: ptr(int64(sidecarUID)), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}, warnings
}

// movedProbe moves the app's readiness probe into the queue-proxy, which
// probes the app itself (every 50ms at start) and answers the kubelet: an
// httpGet probe keeps its path, period, timeout and threshold; a tcpSocket
// probe is the queue-proxy's default. Other probes stay on the app.
func movedProbe(p *corev1.Probe, field string) ([]corev1.EnvVar, []string) {
	if p == nil || p.HTTPGet == nil {
		if p != nil && p.TCPSocket == nil {
			return nil, []string{field + ".readinessProbe: an exec or grpc probe stays on the app container; the queue-proxy also " +
				"checks that the app accepts connections on its port"}
		}
		return nil, nil
	}
	path := p.HTTPGet.Path
	if path == "" {
		path = "/"
	}
	env := []corev1.EnvVar{{Name: config.EnvReadinessProbePath, Value: path}}
	if p.PeriodSeconds > 0 {
		env = append(env, corev1.EnvVar{Name: config.EnvReadinessProbePeriod, Value: strconv.Itoa(int(p.PeriodSeconds))})
	}
	if p.TimeoutSeconds > 0 {
		env = append(env, corev1.EnvVar{Name: config.EnvReadinessProbeTimeout, Value: strconv.Itoa(int(p.TimeoutSeconds))})
	}
	if p.FailureThreshold > 0 {
		env = append(env, corev1.EnvVar{Name: config.EnvReadinessFailures, Value: strconv.Itoa(int(p.FailureThreshold))})
	}
	var warnings []string
	if p.HTTPGet.Scheme == corev1.URISchemeHTTPS || len(p.HTTPGet.HTTPHeaders) > 0 {
		warnings = append(warnings, field+".readinessProbe.httpGet: the queue-proxy probes the path over plain HTTP without the probe's headers")
	}
	return env, warnings
}

// rewireApp puts the app behind the queue-proxy: its port is no longer
// declared (the Services route to the queue-proxy), PORT says where to
// listen, its readiness is the queue-proxy's (when moved), probes that
// named the port use its number, and it outlives the queue-proxy's drain.
func rewireApp(app *corev1.Container, i int, w wiring, s Settings) []string {
	app.Ports = nil
	if w.setPort {
		app.Env = append(app.Env, corev1.EnvVar{Name: envPort, Value: strconv.Itoa(int(w.port))})
	}
	if p := app.ReadinessProbe; p != nil && (p.HTTPGet != nil || p.TCPSocket != nil) {
		app.ReadinessProbe = nil
	}
	for _, p := range []*corev1.Probe{app.LivenessProbe, app.StartupProbe, app.ReadinessProbe} {
		numberPort(p, w)
	}
	var warnings []string
	switch {
	case s.DrainPeriod <= 0:
	case app.Lifecycle == nil:
		app.Lifecycle = &corev1.Lifecycle{PreStop: drainSleep(s)}
	case app.Lifecycle.PreStop == nil:
		app.Lifecycle.PreStop = drainSleep(s)
	default:
		warnings = append(warnings, fmt.Sprintf("spec.containers[%d].lifecycle.preStop: kept; the app should stay up for the queue-proxy's "+
			"drain (%s) before it stops", i, s.DrainPeriod))
	}
	return warnings
}

// numberPort replaces the app's port name in a probe by its number: the
// name leaves with the container's ports.
func numberPort(p *corev1.Probe, w wiring) {
	if p == nil || w.portName == "" {
		return
	}
	for _, port := range []*intstr.IntOrString{httpPort(p), tcpPort(p)} {
		if port != nil && port.Type == intstr.String && port.StrVal == w.portName {
			*port = intstr.FromInt32(w.port)
		}
	}
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

// drainSleep keeps the app up while the queue-proxy drains.
func drainSleep(s Settings) *corev1.LifecycleHandler {
	return &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: wholeSeconds(s.DrainPeriod)}}
}

func wholeSeconds(d interface{ Seconds() float64 }) int64 { return int64(math.Ceil(d.Seconds())) }

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func ptr[T any](v T) *T { return &v }
