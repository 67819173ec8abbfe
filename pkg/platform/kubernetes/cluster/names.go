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
)

// HostPort joins an address and a port.
func HostPort(ip string, port int32) string {
	return net.JoinHostPort(ip, strconv.Itoa(int(port)))
}
