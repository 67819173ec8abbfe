package cluster

import (
	"net"
	"strconv"
)

// Names both programs read (the labels and annotations of revisions are
// in pkg/config: LabelEnabled, AnnotationContainerConcurrency).
const (
	// PortName is the name of the serving port on Ebb's Services and
	// EndpointSlices (the activator's Service uses it too).
	PortName = "http"

	// queueTimeoutEnv is the queue-proxy's request timeout variable; the
	// activator uses the sidecar's literal value when there is one.
	queueTimeoutEnv = "REVISION_TIMEOUT_SECONDS"
)

// HostPort joins an address and a port.
func HostPort(ip string, port int32) string {
	return net.JoinHostPort(ip, strconv.Itoa(int(port)))
}
