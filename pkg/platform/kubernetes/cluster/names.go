package cluster

import (
	"net"
	"strconv"

	"ebb.dev/ebb/pkg/config"
)

// Names both programs read (the labels and annotations of revisions are
// in pkg/config: LabelEnabled, AnnotationContainerConcurrency).
const (
	// PortName is the name of the serving port on Ebb's Services and
	// EndpointSlices (the activator's Service uses it too).
	PortName = config.PortNameHTTP
	// EndpointSliceManager is the manager label value of the
	// EndpointSlices Ebb writes: Kubernetes' EndpointSlice controller
	// leaves them alone.
	EndpointSliceManager = "autoscaler.ebb.dev"
)

// HostPort joins an address and a port.
func HostPort(ip string, port int32) string {
	return net.JoinHostPort(ip, strconv.Itoa(int(port)))
}
