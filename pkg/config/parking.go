package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Parking: where a revision would go to zero replicas, Ebb may keep one
// replica parked instead: running and Ready, its resource requests lowered
// in place (the Kubernetes platform resizes the pod through its resize
// subresource), the activator in the path. A request wakes it in
// milliseconds instead of a cold start; a revision parked longer than
// max-parked-duration goes to zero.

// Keys of config-autoscaler for parking (Ebb's extension).
const (
	KeyEnableParking       = "enable-parking"
	KeyParkedCPURequest    = "parked-cpu-request"
	KeyParkedMemoryRequest = "parked-memory-request"
	KeyMaxParkedDuration   = "max-parked-duration"
	KeyParkedCost          = "parked-cost"
)

// Annotations for parking (Ebb's extension); each overrides its key.
const (
	AnnotationEnableParking       = EbbAutoscalingPrefix + KeyEnableParking
	AnnotationParkedCPURequest    = EbbAutoscalingPrefix + KeyParkedCPURequest
	AnnotationParkedMemoryRequest = EbbAutoscalingPrefix + KeyParkedMemoryRequest
	AnnotationMaxParkedDuration   = EbbAutoscalingPrefix + KeyMaxParkedDuration
	AnnotationParkedCost          = EbbAutoscalingPrefix + KeyParkedCost
)

// PodAnnotationParkedFrom is set by the Kubernetes platform on a parked
// pod: the requests its containers had before they were lowered (JSON:
// container name to {"cpu", "memory"}), which a wake restores.
const PodAnnotationParkedFrom = EbbAutoscalingPrefix + "parked-from"

// Defaults of the parking settings: off; a parked pod asks for 1m of CPU
// and at least 16Mi of memory (never less than it uses); at most an hour
// parked; a parked replica-second is worth a tenth of an idle one.
const (
	DefaultEnableParking       = false
	DefaultParkedCPURequest    = 1         // millicores
	DefaultParkedMemoryRequest = 16 << 20  // bytes
	DefaultMaxParkedDuration   = time.Hour // 0 = no limit
	DefaultParkedCost          = 0.1       // fraction of an idle replica's cost
	maxParkedDurationLimit     = 7 * 24 * time.Hour
	maxParkedCPURequest        = 1000 * 1000     // a thousand cores, in millicores
	maxParkedMemoryRequest     = int64(1) << 50  // 1Pi
	parkedMemoryExample        = "16Mi"          // a valid value, for fixes
	parkedCPUExample           = "1m"            // a valid value, for fixes
	parkedDurationExample      = `"1h"`          // a valid value, for fixes
	parkedCostRule             = "within (0, 1]" // the rule of parked-cost
	parkedCostFix              = "set a fraction such as 0.1 (a parked replica-second costs a tenth of an idle one)"
	parkedDurationRule         = "within [0s, 168h], whole seconds; 0 = no limit"
	parkedCPURule              = "a CPU quantity within [1m, 1000]: millicores (1m) or cores (0.001)"
	parkedMemoryRule           = "a memory quantity within [1Ki, 1Pi]: bytes, or with a suffix Ki, Mi, Gi, Ti, k, M, G, T"
)

// parkingKeys are the key table's rows for parking.
func parkingKeys() []configKey {
	return []configKey{
		boolKey(KeyDoc{
			Name: KeyEnableParking, Default: "false", Rule: "true or false",
			Doc: "Ebb only: keep a revision's last pod parked instead of scaling to zero: running and Ready with its requests " +
				"lowered in place (parked-cpu-request, parked-memory-request), the activator in the path, so a request wakes it in " +
				"milliseconds instead of a cold start. A revision at one pod is parked once no request has been in flight for the " +
				"panic window; it goes to zero after max-parked-duration, or as without parking where the platform cannot resize " +
				"the pod (it says so in an Event and in the status).",
			Override: AnnotationEnableParking,
		}, func(a *Autoscaler) *bool { return &a.EnableParking }),
		{
			KeyDoc: KeyDoc{Name: KeyParkedCPURequest, Type: "quantity", Default: parkedCPUExample, Rule: parkedCPURule,
				Doc:      "Ebb only: the CPU request of a parked pod's containers (limits stay as set).",
				Override: AnnotationParkedCPURequest},
			parse: func(a *Autoscaler, raw string) *violation {
				m, v := parseMilliCPU(raw)
				a.ParkedCPURequestMilli = m
				return v
			},
		},
		{
			KeyDoc: KeyDoc{Name: KeyParkedMemoryRequest, Type: "quantity", Default: parkedMemoryExample, Rule: parkedMemoryRule,
				Doc: "Ebb only: the floor of a parked pod's containers' memory request; a container that uses more keeps a " +
					"request of what it uses (never below), and limits stay as set.",
				Override: AnnotationParkedMemoryRequest},
			parse: func(a *Autoscaler, raw string) *violation {
				b, v := parseBytes(raw)
				a.ParkedMemoryRequestBytes = b
				return v
			},
		},
		durationKey(KeyDoc{
			Name: KeyMaxParkedDuration, Default: "1h", Rule: parkedDurationRule,
			Doc:      "Ebb only: how long a revision may stay parked before it goes to zero; 0 keeps it parked until traffic comes.",
			Override: AnnotationMaxParkedDuration,
		}, func(a *Autoscaler) *time.Duration { return &a.MaxParkedDuration }, checkMaxParked),
		floatKey(KeyDoc{
			Name: KeyParkedCost, Default: "0.1", Rule: parkedCostRule,
			Doc: "Ebb only, learned policy with parking: what a parked replica-second costs as a fraction of an idle replica's. " +
				"The policy keeps a pod parked while the parked time the rest of the idle gap is expected to take costs less than " +
				"the cold start it spares (cold-start-cost), else it goes to zero.",
			Override: AnnotationParkedCost,
		}, func(a *Autoscaler) *float64 { return &a.ParkedCost }, checkParkedCost),
	}
}

func checkMaxParked(d time.Duration) *violation {
	if d < 0 || d > maxParkedDurationLimit {
		return broken("must be within [0s, 168h]", "set a duration such as "+parkedDurationExample+", or \"0s\" for no limit")
	}
	return wholeSeconds(d, 0)
}

func checkParkedCost(f float64) *violation {
	if f <= 0 || f > 1 {
		return broken("must be "+parkedCostRule, parkedCostFix)
	}
	return nil
}

// parseMilliCPU reads a CPU quantity as Kubernetes writes one: "250m"
// (millicores) or "0.25" (cores), to whole millicores within [1m, 1000].
func parseMilliCPU(s string) (int64, *violation) {
	fix := fmt.Sprintf("write millicores such as %q, or cores such as \"0.001\"", parkedCPUExample)
	var m float64
	if n, ok := strings.CutSuffix(s, "m"); ok {
		i, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			return 0, spaced(s, broken("must be a CPU quantity", fix))
		}
		m = float64(i)
	} else {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, spaced(s, broken("must be a CPU quantity", fix))
		}
		m = f * 1000
	}
	if m != math.Trunc(m) {
		return 0, broken("must be a whole number of millicores", fmt.Sprintf("round it, e.g. %q", strconv.FormatFloat(math.Ceil(m), 'f', 0, 64)+"m"))
	}
	if m < 1 || m > maxParkedCPURequest {
		return 0, broken("must be within [1m, 1000]", fix)
	}
	return int64(m), nil
}

// byteSuffixes are the memory quantity suffixes parseBytes reads
// (Kubernetes' binary and decimal ones), longest first.
var byteSuffixes = []struct {
	s string
	n int64
}{
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
	{"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
}

// parseBytes reads a memory quantity: whole bytes, or a whole number with
// one of byteSuffixes, within [1Ki, 1Pi].
func parseBytes(s string) (int64, *violation) {
	fix := fmt.Sprintf("write a whole number with a unit such as %q", parkedMemoryExample)
	num, unit := s, int64(1)
	for _, suf := range byteSuffixes {
		if n, ok := strings.CutSuffix(s, suf.s); ok {
			num, unit = n, suf.n
			break
		}
	}
	i, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, spaced(s, broken("must be a memory quantity", fix))
	}
	if i < 1 || i > maxParkedMemoryRequest/unit || i*unit < 1<<10 {
		return 0, broken("must be within [1Ki, 1Pi]", fix)
	}
	return i * unit, nil
}

// FormatMilliCPU writes millicores as a CPU quantity ("1m").
func FormatMilliCPU(m int64) string { return strconv.FormatInt(m, 10) + "m" }

// parkingAnnotations are the annotation table's rows for parking.
func parkingAnnotations() []annotationKey {
	return []annotationKey{
		annotation(AnnotationDoc{Key: AnnotationEnableParking, Example: "true", Default: KeyEnableParking, Rule: "true or false",
			Doc: "Ebb only: park the revision's last pod instead of scaling to zero (see " + KeyEnableParking + ")."},
			"bool", func(raw, _ string) (bool, *violation) { return parseBool(raw) },
			func(a *parsedAnnotations) *slot[bool] { return &a.enableParking }, nil),
		annotation(AnnotationDoc{Key: AnnotationParkedCPURequest, Example: parkedCPUExample, Default: KeyParkedCPURequest,
			Rule: parkedCPURule, Doc: "Ebb only: the CPU request of a parked pod's containers."},
			"quantity", func(raw, _ string) (int64, *violation) { return parseMilliCPU(raw) },
			func(a *parsedAnnotations) *slot[int64] { return &a.parkedCPU }, nil),
		annotation(AnnotationDoc{Key: AnnotationParkedMemoryRequest, Example: parkedMemoryExample, Default: KeyParkedMemoryRequest,
			Rule: parkedMemoryRule, Doc: "Ebb only: the floor of a parked pod's containers' memory request (never below what it uses)."},
			"quantity", func(raw, _ string) (int64, *violation) { return parseBytes(raw) },
			func(a *parsedAnnotations) *slot[int64] { return &a.parkedMemory }, nil),
		durationAnn(AnnotationDoc{Key: AnnotationMaxParkedDuration, Example: "30m", Default: KeyMaxParkedDuration,
			Rule: parkedDurationRule, Doc: "Ebb only: how long the revision may stay parked before it goes to zero."},
			func(a *parsedAnnotations) *slot[time.Duration] { return &a.maxParked },
			func(_ *revisionParse, d time.Duration) *violation { return checkMaxParked(d) }),
		floatAnn(AnnotationDoc{Key: AnnotationParkedCost, Example: "0.1", Default: KeyParkedCost, Rule: parkedCostRule,
			Doc: "Ebb only, learned policy with parking: a parked replica-second's cost as a fraction of an idle one's."},
			func(a *parsedAnnotations) *slot[float64] { return &a.parkedCost },
			func(_ *revisionParse, f float64) *violation { return checkParkedCost(f) }),
	}
}

// Parking is a revision's parking settings (Revision.Parking).
type Parking struct {
	// Enabled is enable-parking: park the last replica instead of going
	// to zero.
	Enabled bool
	// CPURequestMilli is parked-cpu-request in millicores.
	CPURequestMilli int64
	// MemoryRequestBytes is parked-memory-request: the floor of a parked
	// container's memory request (never below its usage).
	MemoryRequestBytes int64
	// MaxDuration is max-parked-duration; 0 = no limit.
	MaxDuration time.Duration
	// Cost is parked-cost: a parked replica-second's cost as a fraction
	// of an idle replica-second's (the learned policy's choice).
	Cost float64
}

// resolveParking is the revision's parking: the annotations over the
// ConfigMap.
func (p *revisionParse) resolveParking() Parking {
	as, a := p.as, &p.ann
	return Parking{
		Enabled:            a.enableParking.or(as.EnableParking),
		CPURequestMilli:    a.parkedCPU.or(as.ParkedCPURequestMilli),
		MemoryRequestBytes: a.parkedMemory.or(as.ParkedMemoryRequestBytes),
		MaxDuration:        a.maxParked.or(as.MaxParkedDuration),
		Cost:               a.parkedCost.or(as.ParkedCost),
	}
}
