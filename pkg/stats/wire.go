package stats

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// wireVersion is the version of the encoding that AppendBinary writes and
// UnmarshalBinary reads. See doc.go for the layout.
const wireVersion = 1

// ContentType is the media type of an encoded Stat on the stats endpoint.
const ContentType = "application/vnd.ebb.stat.v1"

// Path is the stats endpoint: a queue-proxy's admin port answers GET Path
// with one encoded Stat (ContentType), which the autoscaler scrapes.
const Path = "/stats"

// KubeletProbePath is the queue-proxy's admin path the kubelet's readiness
// probe asks (the webhook injects the probe): the app's readiness, a drain
// aside. The admin port stays open through the drain until the
// queue-proxy exits, so a draining pod's probe never finds a closed port
// (the serving port closes while its connections finish).
const KubeletProbePath = "/readyz"

// Offsets of the version-1 layout (doc.go has the table).
const (
	offMagic       = 0
	offVersion     = 2
	offSource      = 3
	offTime        = 4
	offPeriod      = 12
	offUptime      = 20
	offConcurrency = 28
	offProxiedConc = 36
	offRequests    = 44
	offProxiedReqs = 52
	fixedLen       = 60
	// minWireLen is the length of an encoded Stat with empty names.
	minWireLen = fixedLen + 2
	// MaxWireLen is the length of an encoded Stat with the longest names.
	MaxWireLen = minWireLen + MaxPodNameLen + MaxRevisionLen
)

var magic = [2]byte{'e', 'b'}

// Sentinel errors of UnmarshalBinary; the returned error wraps one of them.
var (
	errShort   = errors.New("stats: message too short")
	errMagic   = errors.New("stats: not an Ebb stat (bad magic)")
	errVersion = errors.New("stats: unsupported wire version")
	errInvalid = errors.New("stats: invalid stat")
)

// Bounds of the numbers of a Stat, checked on the wire (Validate). They are
// far above anything one queue-proxy or activator can measure, and low
// enough that sums over thousands of reporters and an hour of seconds stay
// finite: a reporter that claims more is broken or hostile, and its report
// is refused rather than allowed to scale a revision to its max-scale.
const (
	// maxConcurrency bounds AverageConcurrency: requests in flight at once
	// through one reporter.
	maxConcurrency = 1e6
	// maxRequestRate bounds RequestCount: requests per second of Period
	// through one reporter, a Period shorter than a second counting as one
	// (a scrape right after another covers a few microseconds).
	maxRequestRate = 1e7
	// maxPeriod bounds Period: the time one report covers.
	maxPeriod = time.Hour
)

// Validate reports whether s can be encoded: a known source, names within
// their limits, finite non-negative numbers within their bounds, and proxied
// parts no larger than the whole. The error names the field, the value and
// the rule.
func (s *Stat) Validate() error {
	switch {
	case s.Source != SourceQueueProxy && s.Source != SourceActivator:
		return fmt.Errorf("%w: source %d is neither queue-proxy (1) nor activator (2)", errInvalid, s.Source)
	case len(s.PodName) > MaxPodNameLen:
		return fmt.Errorf("%w: pod name is %d bytes, limit %d", errInvalid, len(s.PodName), MaxPodNameLen)
	case len(s.Revision) > MaxRevisionLen:
		return fmt.Errorf("%w: revision is %d bytes, limit %d", errInvalid, len(s.Revision), MaxRevisionLen)
	case s.Period < 0 || s.Period > maxPeriod:
		return fmt.Errorf("%w: period %v must be within [0, %v]", errInvalid, s.Period, maxPeriod)
	case s.ProcessUptime < 0:
		return fmt.Errorf("%w: uptime %v must not be negative", errInvalid, s.ProcessUptime)
	}
	return s.validateNumbers()
}

// validateNumbers checks the averages and counts.
func (s *Stat) validateNumbers() error {
	switch {
	case !within(s.AverageConcurrency, maxConcurrency):
		return fmt.Errorf("%w: average concurrency %v must be finite and within [0, %g]", errInvalid, s.AverageConcurrency, float64(maxConcurrency))
	case !within(s.AverageProxiedConcurrency, s.AverageConcurrency):
		return fmt.Errorf(
			"%w: average proxied concurrency %v must be finite and within [0, concurrency %v]", errInvalid, s.AverageProxiedConcurrency, s.AverageConcurrency)
	case s.RequestCount > maxRequestCount(s.Period):
		return fmt.Errorf(
			"%w: request count %d over period %v exceeds %d (%g requests/s)", errInvalid, s.RequestCount, s.Period, maxRequestCount(s.Period), float64(maxRequestRate))
	case s.ProxiedRequestCount > s.RequestCount:
		return fmt.Errorf("%w: proxied request count %d exceeds request count %d", errInvalid, s.ProxiedRequestCount, s.RequestCount)
	}
	return nil
}

// maxRequestCount is the largest RequestCount of a report covering period.
func maxRequestCount(period time.Duration) uint64 {
	return uint64(maxRequestRate * max(period.Seconds(), 1))
}

// within reports whether f is a number in [0, limit] (false for NaN).
func within(f, limit float64) bool { return f >= 0 && f <= limit }

// appendBinary appends the version-1 encoding of s to dst
// (encoding.BinaryAppender). It allocates only if dst is too small.
func (s *Stat) appendBinary(dst []byte) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return dst, err
	}
	var unix int64
	if !s.Time.IsZero() {
		unix = s.Time.UnixNano()
	}
	dst = append(dst, magic[0], magic[1], wireVersion, byte(s.Source))
	dst = binary.BigEndian.AppendUint64(dst, uint64(unix))
	dst = binary.BigEndian.AppendUint64(dst, uint64(s.Period))
	dst = binary.BigEndian.AppendUint64(dst, uint64(s.ProcessUptime))
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(s.AverageConcurrency))
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(s.AverageProxiedConcurrency))
	dst = binary.BigEndian.AppendUint64(dst, s.RequestCount)
	dst = binary.BigEndian.AppendUint64(dst, s.ProxiedRequestCount)
	dst = append(dst, byte(len(s.PodName)))
	dst = append(dst, s.PodName...)
	dst = append(dst, byte(len(s.Revision)))
	dst = append(dst, s.Revision...)
	return dst, nil
}

// MarshalBinary returns the version-1 encoding of s (encoding.BinaryMarshaler).
func (s *Stat) MarshalBinary() ([]byte, error) {
	return s.appendBinary(make([]byte, 0, minWireLen+len(s.PodName)+len(s.Revision)))
}

// UnmarshalBinary decodes one version-1 Stat that fills b exactly
// (encoding.BinaryUnmarshaler). On error s is left unchanged.
func (s *Stat) UnmarshalBinary(b []byte) error {
	if len(b) < minWireLen {
		return fmt.Errorf("%w: %d bytes, need at least %d", errShort, len(b), minWireLen)
	}
	if b[offMagic] != magic[0] || b[offMagic+1] != magic[1] {
		return fmt.Errorf("%w: %q", errMagic, b[offMagic:offMagic+2])
	}
	if b[offVersion] != wireVersion {
		return fmt.Errorf("%w: %d (this reader knows %d)", errVersion, b[offVersion], wireVersion)
	}
	pod, rest, err := readName(b[fixedLen:], "pod name")
	if err != nil {
		return err
	}
	rev, rest, err := readName(rest, "revision")
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", errInvalid, len(rest))
	}
	out := Stat{
		Source:                    Source(b[offSource]),
		PodName:                   pod,
		Revision:                  rev,
		Period:                    time.Duration(be64(b, offPeriod)),
		ProcessUptime:             time.Duration(be64(b, offUptime)),
		AverageConcurrency:        math.Float64frombits(be64(b, offConcurrency)),
		AverageProxiedConcurrency: math.Float64frombits(be64(b, offProxiedConc)),
		RequestCount:              be64(b, offRequests),
		ProxiedRequestCount:       be64(b, offProxiedReqs),
	}
	if unix := int64(be64(b, offTime)); unix != 0 {
		out.Time = time.Unix(0, unix)
	}
	if err := out.Validate(); err != nil {
		return err
	}
	*s = out
	return nil
}

func be64(b []byte, off int) uint64 { return binary.BigEndian.Uint64(b[off : off+8]) }

// readName reads one length-prefixed name and returns it with the rest of b.
func readName(b []byte, what string) (string, []byte, error) {
	if len(b) < 1 {
		return "", nil, fmt.Errorf("%w: no length byte for the %s", errShort, what)
	}
	n := int(b[0])
	if len(b)-1 < n {
		return "", nil, fmt.Errorf("%w: %s of %d bytes, %d left", errShort, what, n, len(b)-1)
	}
	return string(b[1 : 1+n]), b[1+n:], nil
}
