package convert

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/manifest"
	"ebb.dev/ebb/pkg/stats"
)

// The long form's queue-proxy, as deploy/kubernetes/example-app.yaml
// writes it (docs/kubernetes.md, "A revision").
const (
	// queueProxyName is the sidecar's container name: the Kubernetes
	// platform tells a revision with the sidecar by it (its
	// QueueProxyContainer; a test keeps the two equal without this package
	// importing client-go).
	queueProxyName = "queue-proxy"
	servingPort    = 8012 // the Service routes requests here ("http")
	adminPort      = 9090 // /stats for the autoscaler ("admin")
	// drainSeconds is the queue-proxy's DRAIN_PERIOD_SECONDS and the app's
	// preStop sleep: clients and activators learn that the pod is going.
	drainSeconds = 15
	// proxySecretName is the Secret, copied into each namespace of
	// revisions, that holds the activator's proxy secret.
	proxySecretName = "ebb-proxy-secret"
)

// addSidecar writes the long form into dep: the queue-proxy in front of
// the app's port, the app's HTTP or TCP readiness probe moved to it, the
// app kept up through the drain, and a grace period that covers the drain
// and the longest request.
func addSidecar(dep *appsv1.Deployment, t manifest.Timeouts, image string) error {
	pod := &dep.Spec.Template.Spec
	for _, c := range pod.Containers {
		if c.Name == queueProxyName {
			return fmt.Errorf("spec.template.spec.containers: a container is already named %q; rename the app's container", queueProxyName)
		}
	}
	if dep.Spec.Template.Annotations[config.AnnotationContainerConcurrency] == "" {
		// The queue-proxy reads it through the downward API; a missing
		// annotation would give it an empty variable, which it refuses.
		dep.Spec.Template.Annotations[config.AnnotationContainerConcurrency] = "0"
	}
	app := &pod.Containers[0]
	userPort, upstream := appPort(app)
	app.Ports = nil // only the queue-proxy reaches the app
	probePath := ""
	if p := app.ReadinessProbe; p != nil && (p.HTTPGet != nil || p.TCPSocket != nil) {
		if p.HTTPGet != nil {
			probePath = p.HTTPGet.Path
		}
		app.ReadinessProbe = nil // the queue-proxy probes the app; the kubelet probes the queue-proxy
	}
	if app.Lifecycle == nil || app.Lifecycle.PreStop == nil {
		if app.Lifecycle == nil {
			app.Lifecycle = &corev1.Lifecycle{}
		}
		app.Lifecycle.PreStop = &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: drainSeconds}}
	}
	request := int64(config.DefaultRevisionTimeout.Seconds())
	if t.Request != nil {
		request = *t.Request
	}
	if pod.TerminationGracePeriodSeconds == nil {
		pod.TerminationGracePeriodSeconds = ptr(request + drainSeconds)
	}
	pod.Containers = append(pod.Containers, queueProxy(queueProxyEnv(dep.Name, userPort, upstream, probePath, request, t), image))
	return nil
}

// appPort is the app's port (PORT, as the manifest package set it) and the
// protocol the queue-proxy speaks to it (h2c for a port named h2c).
func appPort(app *corev1.Container) (string, string) {
	port := strconv.Itoa(manifest.DefaultKnativePort)
	for _, e := range app.Env {
		if e.Name == "PORT" && e.ValueFrom == nil {
			port = e.Value
		}
	}
	upstream := config.UpstreamHTTP1
	if len(app.Ports) > 0 {
		upstream = config.UpstreamProtocolOfPort(app.Ports[0].Name)
	}
	return port, upstream
}

func queueProxyEnv(name, userPort, upstream, probePath string, request int64, t manifest.Timeouts) []corev1.EnvVar {
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	env := []corev1.EnvVar{
		{Name: "USER_PORT", Value: userPort},
		{Name: "SERVING_POD", ValueFrom: field("metadata.name")},
		{Name: "POD_NAMESPACE", ValueFrom: field("metadata.namespace")},
		{Name: "SERVING_REVISION", Value: "$(POD_NAMESPACE)/" + name},
		{Name: "CONTAINER_CONCURRENCY", ValueFrom: field("metadata.annotations['" + config.AnnotationContainerConcurrency + "']")},
		{Name: config.EnvRevisionTimeout, Value: strconv.FormatInt(request, 10)},
	}
	if t.ResponseStart != nil {
		env = append(env, corev1.EnvVar{Name: config.EnvResponseStartTimeout, Value: strconv.FormatInt(*t.ResponseStart, 10)})
	}
	if t.Idle != nil {
		env = append(env, corev1.EnvVar{Name: config.EnvIdleTimeout, Value: strconv.FormatInt(*t.Idle, 10)})
	}
	env = append(env,
		corev1.EnvVar{Name: "DRAIN_PERIOD_SECONDS", Value: strconv.Itoa(drainSeconds)},
		corev1.EnvVar{Name: config.EnvUpstreamProtocol, Value: upstream})
	if probePath != "" {
		env = append(env, corev1.EnvVar{Name: "READINESS_PROBE_PATH", Value: probePath})
	}
	return append(env, corev1.EnvVar{Name: stats.ProxySecretEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: proxySecretName}, Key: "secret", Optional: ptr(true)}}})
}

func queueProxy(env []corev1.EnvVar, image string) corev1.Container {
	return corev1.Container{
		Name:  queueProxyName,
		Image: image,
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: servingPort}, {Name: "admin", ContainerPort: adminPort}},
		Env:   env,
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
			PeriodSeconds: 1},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("25m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(65532)),
			AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true),
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}
