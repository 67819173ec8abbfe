package inject

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"ebb.dev/ebb/pkg/config"
)

// The queue-proxy's bounds of a moved probe (READINESS_PROBE_PERIOD_SECONDS,
// READINESS_PROBE_TIMEOUT_SECONDS, READINESS_FAILURE_THRESHOLD in
// pkg/queueproxy/config.go): a probe beyond them stays on the app, so the
// queue-proxy never gets a value it refuses at start. The fuzz test loads
// every injected sidecar's environment with the queue-proxy's own loader.
const (
	maxProbePeriodSeconds  = 300
	maxProbeTimeoutSeconds = 60
	maxProbeFailures       = 100
)

// movableProbe is the app's readiness probe when the queue-proxy can run
// it as written, nil otherwise. The queue-proxy probes the app's port on
// 127.0.0.1 (every 50ms at start, then every period), over plain HTTP
// with GET and no headers, or by a TCP connect. A probe of another port or
// host, over HTTPS, with headers, of a path the queue-proxy cannot take,
// or with values beyond its bounds stays on the app (probeWarnings says
// why), as do exec and grpc probes.
func movableProbe(p *corev1.Probe, w wiring) *corev1.Probe {
	if unmovable(p, w) != "" {
		return nil
	}
	return p
}

// unmovable says why p stays on the app ("" when it moves; "-" for no
// probe at all).
func unmovable(p *corev1.Probe, w wiring) string {
	var port intstr.IntOrString
	switch {
	case p == nil:
		return "-"
	case p.HTTPGet != nil:
		g := p.HTTPGet
		switch {
		case g.Host != "":
			return fmt.Sprintf("it probes the host %q", g.Host)
		case g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP:
			return "it probes over " + string(g.Scheme)
		case len(g.HTTPHeaders) > 0:
			return "it sends headers"
		case g.Path != "" && (!strings.HasPrefix(g.Path, "/") || strings.ContainsAny(g.Path, " \t\r\n")):
			return fmt.Sprintf("its path %q is not an absolute path", g.Path)
		}
		port = g.Port
	case p.TCPSocket != nil:
		if p.TCPSocket.Host != "" {
			return fmt.Sprintf("it probes the host %q", p.TCPSocket.Host)
		}
		port = p.TCPSocket.Port
	default:
		return "an exec or grpc probe is the app's own"
	}
	switch {
	case !(port.Type == intstr.Int && port.IntVal == w.port || port.Type == intstr.String && port.StrVal != "" && port.StrVal == w.portName):
		return fmt.Sprintf("it probes port %s, not the app's port %d", port.String(), w.port)
	case p.PeriodSeconds > maxProbePeriodSeconds:
		return fmt.Sprintf("its periodSeconds %d is above the queue-proxy's %d", p.PeriodSeconds, maxProbePeriodSeconds)
	case p.TimeoutSeconds > maxProbeTimeoutSeconds:
		return fmt.Sprintf("its timeoutSeconds %d is above the queue-proxy's %d", p.TimeoutSeconds, maxProbeTimeoutSeconds)
	case p.FailureThreshold > maxProbeFailures:
		return fmt.Sprintf("its failureThreshold %d is above the queue-proxy's %d", p.FailureThreshold, maxProbeFailures)
	}
	return ""
}

// probeEnv is the queue-proxy's environment of a moved probe: an httpGet
// probe's path (a tcpSocket probe is the queue-proxy's default), period,
// timeout and failure threshold.
func probeEnv(p *corev1.Probe) []corev1.EnvVar {
	if p == nil {
		return nil
	}
	var env []corev1.EnvVar
	if p.HTTPGet != nil {
		path := p.HTTPGet.Path
		if path == "" {
			path = "/"
		}
		env = append(env, corev1.EnvVar{Name: config.EnvReadinessProbePath, Value: path})
	}
	for _, v := range []struct {
		name string
		n    int32
	}{{config.EnvReadinessProbePeriod, p.PeriodSeconds}, {config.EnvReadinessProbeTimeout, p.TimeoutSeconds},
		{config.EnvReadinessFailures, p.FailureThreshold}} {
		if v.n > 0 {
			env = append(env, corev1.EnvVar{Name: v.name, Value: strconv.Itoa(int(v.n))})
		}
	}
	return env
}

// probeWarnings say what happens to the app's readiness probe p when it
// stays (moved is nil), or what of it the queue-proxy does not apply.
func probeWarnings(p, moved *corev1.Probe, w wiring) []string {
	at := w.field + ".readinessProbe"
	if moved == nil {
		why := unmovable(p, w)
		if why == "-" {
			return nil
		}
		return []string{at + ": stays on the app container (" + why + "); the queue-proxy also checks that the app accepts " +
			"connections on its port"}
	}
	var skipped []string
	if p.InitialDelaySeconds > 0 {
		skipped = append(skipped, "initialDelaySeconds")
	}
	if p.SuccessThreshold > 1 {
		skipped = append(skipped, "successThreshold")
	}
	if len(skipped) == 0 {
		return nil
	}
	return []string{at + ": moves into the queue-proxy, which probes every 50ms until the app is ready and does not apply " +
		strings.Join(skipped, " or ")}
}
