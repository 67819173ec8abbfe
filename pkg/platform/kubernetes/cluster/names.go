package cluster

import (
	"net"
	"strconv"
	"time"
)

// Labels, annotations and names both programs read.
const (
	// EnabledLabel opts a Deployment in: it is a revision.
	EnabledLabel = "autoscaling.ebb.dev/enabled"
	// ContainerConcurrencyAnnotation is the per-pod hard limit (a pod
	// template annotation; the autoscaler validates it).
	ContainerConcurrencyAnnotation = "autoscaling.ebb.dev/container-concurrency"
	// PortName is the name of the serving port on Ebb's Services and
	// EndpointSlices (the activator's Service uses it too).
	PortName = "http"

	// defaultTimeout is Knative's default request timeout (timeoutSeconds).
	defaultTimeout = 300 * time.Second
	// queueTimeoutEnv is the queue-proxy's request timeout variable; the
	// activator uses the sidecar's literal value when there is one.
	queueTimeoutEnv = "REVISION_TIMEOUT_SECONDS"
)

// HostPort joins an address and a port.
func HostPort(ip string, port int32) string {
	return net.JoinHostPort(ip, strconv.Itoa(int(port)))
}
