package config

import (
	"ebb.dev/ebb/pkg/fielderr"
)

// The values of the revision annotations that other components read
// themselves (the activator, the platforms): each has one parse function
// here, used by the annotation table and by every other reader, so that
// all of them accept the same values and report the same error.

// LabelEnabled opts a Deployment in: with the value "true" it is a
// revision that Ebb autoscales.
const LabelEnabled = EbbAutoscalingPrefix + "enabled"

// QueueProxyContainer is the name of Ebb's sidecar container in a
// revision's pods: the webhook injects it under this name and leaves a pod
// that has one alone; the Kubernetes platform reads a Deployment without
// it (and without injection) as sidecarless.
const QueueProxyContainer = "queue-proxy"

// Values of AnnotationLoadBalancing. LoadBalancingAuto (also the empty
// value) is Knative's rule: power-of-two-choices when containerConcurrency
// is 0, first-available up to 3, round-robin above.
const (
	LoadBalancingAuto           = "auto"
	LoadBalancingPowerOfTwo     = "power-of-two-choices"
	LoadBalancingFirstAvailable = "first-available"
	LoadBalancingRoundRobin     = "round-robin"
)

// LoadBalancingPolicies lists the values of AnnotationLoadBalancing.
var LoadBalancingPolicies = []string{LoadBalancingAuto, LoadBalancingPowerOfTwo, LoadBalancingFirstAvailable, LoadBalancingRoundRobin}

// ParseContainerConcurrency reads a value of AnnotationContainerConcurrency
// (present: an absent annotation means 0, unlimited). 0 means unlimited;
// the rule is Knative's: a whole number within [0, ContainerConcurrencyMax].
func ParseContainerConcurrency(raw string) (int32, *fielderr.Error) {
	cc, bad := parseContainerConcurrency(raw, "10")
	if bad != nil {
		return 0, annotationError(AnnotationContainerConcurrency, raw, bad)
	}
	return cc, nil
}

// ParseLoadBalancing reads a value of AnnotationLoadBalancing and returns
// one of LoadBalancingPolicies; the empty value is LoadBalancingAuto.
func ParseLoadBalancing(raw string) (string, *fielderr.Error) {
	if raw == "" {
		return LoadBalancingAuto, nil
	}
	if bad := checkLoadBalancing(nil, raw); bad != nil {
		return LoadBalancingAuto, annotationError(AnnotationLoadBalancing, raw, bad)
	}
	return raw, nil
}

func parseContainerConcurrency(raw, example string) (int32, *violation) {
	i, bad := parseInt32(raw, example)
	if bad != nil {
		return 0, bad
	}
	if i < 0 || i > ContainerConcurrencyMax {
		return 0, broken("must be within [0, 1000] (Knative's container-concurrency-max-limit)",
			"set the most requests one pod handles at once, 1 to 1000, or 0 for unlimited")
	}
	return i, nil
}

func checkLoadBalancing(_ *revisionParse, v string) *violation {
	for _, p := range LoadBalancingPolicies {
		if v == p {
			return nil
		}
	}
	return broken("must be auto, power-of-two-choices, first-available or round-robin",
		"remove the annotation for Knative's rule, or name one of the four policies")
}

func checkScaleToZeroPolicy(_ *revisionParse, v string) *violation {
	for _, p := range scaleToZeroPolicies {
		if v == p {
			return nil
		}
	}
	return broken("must be knative or learned", `use "knative" (the default) or "learned"`)
}

func annotationError(key, raw string, v *violation) *fielderr.Error {
	return &fielderr.Error{Source: sourceAnnotation, Key: key, Value: raw, Rule: v.rule, Fix: v.fix}
}

// EnvUpstreamProtocol is the queue-proxy's variable of the protocol it
// speaks to the app: UpstreamHTTP1 (the default: each request in the
// protocol its client spoke) or UpstreamH2C (every request as HTTP/2
// cleartext, HTTP/1.1 clients' too). The platforms set it with
// ResolveUpstreamProtocol (the annotation, else the port name).
const EnvUpstreamProtocol = "QUEUE_UPSTREAM_PROTOCOL"

// Values of EnvUpstreamProtocol.
const (
	UpstreamHTTP1 = "http1"
	UpstreamH2C   = "h2c"
)

// UpstreamProtocols lists the values of EnvUpstreamProtocol.
var UpstreamProtocols = []string{UpstreamHTTP1, UpstreamH2C}

// PortNameH2C is the container port name that asks for HTTP/2 cleartext
// to the app: Knative's signal (it has no annotation for it).
const PortNameH2C = "h2c"

// ParseUpstreamProtocol reads a value of AnnotationUpstreamProtocol and
// returns one of UpstreamProtocols; the empty value (no annotation) is "".
func ParseUpstreamProtocol(raw string) (string, *fielderr.Error) {
	if raw == "" {
		return "", nil
	}
	if bad := checkUpstreamProtocol(nil, raw); bad != nil {
		return "", annotationError(AnnotationUpstreamProtocol, raw, bad)
	}
	return raw, nil
}

func checkUpstreamProtocol(_ *revisionParse, v string) *violation {
	for _, p := range UpstreamProtocols {
		if v == p {
			return nil
		}
	}
	return broken("must be http1 or h2c",
		`remove the annotation for the port-name rule, or set "http1" (the default) or "h2c" (an app that speaks only HTTP/2 cleartext, such as a gRPC server)`)
}

// ResolveUpstreamProtocol is the protocol the queue-proxy speaks to the
// app: the AnnotationUpstreamProtocol value when it is set (parsed by
// ParseUpstreamProtocol), else Knative's port-name rule
// (UpstreamProtocolOfPort) on the app container's port.
func ResolveUpstreamProtocol(annotation, portName string) string {
	if annotation != "" {
		return annotation
	}
	return upstreamProtocolOfPort(portName)
}

// upstreamProtocolOfPort is Knative's rule: a container port named
// PortNameH2C means UpstreamH2C; any other name (http1, or none) means
// UpstreamHTTP1.
func upstreamProtocolOfPort(name string) string {
	if name == PortNameH2C {
		return UpstreamH2C
	}
	return UpstreamHTTP1
}
