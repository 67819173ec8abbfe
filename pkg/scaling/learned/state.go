package learned

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// The learned policy's state travels across autoscaler restarts and leader
// failovers as a small binary blob (State, Restore): the
// idle-gap histogram, the sequence of the latest gaps' bins, the cold
// requests per gap, the seconds of the minute at which the latest long
// gaps ended and the latest replica start-ups, nothing derived (the keep
// decisions are recomputed, the cost and lead come from the revision's
// configuration, which may have changed in between) and not the last
// second with load: the traffic while no autoscaler watched (a leader
// failover's seconds) was not seen, so the idle time it would give is not
// to be trusted. Nor the hour of the day each latest gap ended in (only
// PredictorTimeOfDay, a predictor kept for comparison, reads it).
//
// Layout, version 3 (integers are encoding/binary varints):
//
//	'L', 3                 magic and version
//	bins                   one byte: the histogram's bin count (gapBins)
//	recent                 one byte: the sequence's capacity (recentGaps)
//	phases                 one byte: the phase ring's capacity (phaseGaps)
//	startups               one byte: the start-ups kept (startupsKept)
//	n                      uvarint: the non-empty bins
//	n × (delta, count)     uvarints: bin - previous bin - 1, count in [1, 65535]
//	r                      uvarint: the gaps in the sequence, at most recent
//	r × bin                bytes: their bins, the oldest first
//	cold                   uvarint: the cold requests per gap × 16, at least 16
//	p                      uvarint: the long gaps' phases, at most phases
//	p × phase              bytes: the second of the minute each ended at, the oldest first
//	s                      uvarint: the start-ups, at most startups
//	s × start-up           bytes: seconds in [1, 255], the oldest first
//	crc                    4 bytes, big endian: CRC-32 (IEEE) of all of the above
//
// Version 2, written before the policy read the second of the minute,
// ends after cold (its header has no phases and startups bytes): it
// loads with no phases and no start-ups. Version 1, written before the
// policy read the order of gaps, is the histogram alone ('L', 1, bins,
// n, the pairs, crc): it loads with an empty sequence and one cold
// request per gap too. A blob of another version or layout, or one that
// does not check, is refused with an error that says which
// (ErrLearnedStateForeign, ErrLearnedStateCorrupt); the caller starts
// afresh.

const (
	learnedMagic   = 'L'
	learnedVersion = 3
	// MaxLearnedStateSize bounds a version-3 blob: the header, the bin
	// count, every bin (a delta of one byte, a count of up to three), the
	// sequence, the cold requests, the phases, the start-ups and the
	// checksum.
	MaxLearnedStateSize = 6 + 2 + 128*(1+3) + 2 + recentGaps + maxColdPerGapLen + 1 + phaseGaps + 1 + startupsKept + 4
	// maxColdPerGap bounds the cold requests per gap a blob may hold.
	maxColdPerGap = 1 << 20
	// maxColdPerGapLen is the varint length of maxColdPerGap × 16.
	maxColdPerGapLen = 4
	// coldPerGapScale is the fixed point of the cold requests per gap.
	coldPerGapScale = 16
)

// ErrLearnedStateForeign: the blob was written by another version of the
// encoding or with another histogram layout.
var ErrLearnedStateForeign = errors.New("learned state of another version")

// ErrLearnedStateCorrupt: the blob does not decode or check.
var ErrLearnedStateCorrupt = errors.New("learned state corrupt")

// learnedSnapshot is what a blob holds.
type learnedSnapshot struct {
	counts [128]uint16
	// recent are the latest gaps' bins, the oldest first.
	recent []uint8
	// coldPerGap in sixteenths, at least coldPerGapScale.
	coldPerGap uint32
	// phases are the latest long gaps' seconds of the minute, startups
	// the latest start-ups in seconds, the oldest first.
	phases, startups []uint8
}

func (s *learnedSnapshot) total() int {
	n := 0
	for _, c := range s.counts {
		n += int(c)
	}
	return n
}

// marshalLearned encodes a snapshot (version 3).
func marshalLearned(s *learnedSnapshot) []byte {
	b := make([]byte, 0, 64)
	h := stateHeader{magic: learnedMagic, version: learnedVersion, bins: byte(gapBins), recentGaps: recentGaps, phaseGaps: phaseGaps, startupsKept: startupsKept}
	b = append(b, h.magic, h.version, h.bins, h.recentGaps, h.phaseGaps, h.startupsKept)
	b = appendHistogram(b, &s.counts)
	b = binary.AppendUvarint(b, uint64(len(s.recent)))
	b = append(b, s.recent...)
	b = binary.AppendUvarint(b, uint64(s.coldPerGap))
	b = binary.AppendUvarint(b, uint64(len(s.phases)))
	b = append(b, s.phases...)
	b = binary.AppendUvarint(b, uint64(len(s.startups)))
	b = append(b, s.startups...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

func appendHistogram(b []byte, counts *[128]uint16) []byte {
	n := 0
	for _, c := range counts[:gapBins] {
		if c > 0 {
			n++
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	prev := -1
	for i, c := range counts[:gapBins] {
		if c == 0 {
			continue
		}
		b = binary.AppendUvarint(b, uint64(i-prev-1))
		b = binary.AppendUvarint(b, uint64(c))
		prev = i
	}
	return b
}

// unmarshalLearned decodes a blob of marshalLearned (or of versions 1
// and 2), refusing anything it would not write: a foreign version or
// layout, a bad checksum, bins out of order or range, a count of 0 or
// above 16 bits, more gaps than the policy ever holds (maxGaps), a
// sequence longer than recentGaps or with a bin out of range, cold
// requests per gap below 1 or above maxColdPerGap, more phases than
// phaseGaps or one past 59, more start-ups than startupsKept or one of 0
// seconds, trailing bytes.
func unmarshalLearned(b []byte) (*learnedSnapshot, error) {
	h, head, err := readHeader(b)
	if err != nil {
		return nil, err
	}
	v := h.version
	if len(b) < head+4 || len(b) > MaxLearnedStateSize {
		return nil, fmt.Errorf("%w: %d bytes, want %d to %d", ErrLearnedStateCorrupt, len(b), head+4, MaxLearnedStateSize)
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrLearnedStateCorrupt)
	}
	r := learnedReader{b: body[head:]}
	s := &learnedSnapshot{coldPerGap: coldPerGapScale}
	r.histogram(&s.counts)
	if v >= 2 {
		r.sequence(s)
	}
	if v >= 3 {
		s.phases = r.bytes("phases", phaseGaps, 0, 59)
		s.startups = r.bytes("start-ups", startupsKept, 1, maxStartup)
	}
	switch {
	case r.err != nil:
		return nil, fmt.Errorf("%w: %v", ErrLearnedStateCorrupt, r.err)
	case len(r.b) != 0:
		return nil, fmt.Errorf("%w: %d bytes after the state", ErrLearnedStateCorrupt, len(r.b))
	case s.total() > maxGaps:
		return nil, fmt.Errorf("%w: %d gaps, the policy holds at most %d", ErrLearnedStateCorrupt, s.total(), maxGaps)
	}
	return s, nil
}

// stateHeader is a blob's header: the magic and the version, then the
// layout it was written with (the bins from version 1, the latest gaps
// from version 2, the phases and start-ups from version 3).
type stateHeader struct {
	magic, version          byte
	bins                    byte
	recentGaps              byte
	phaseGaps, startupsKept byte
}

// headerLen is the header's length in each version (0: unknown).
var headerLen = map[byte]int{1: 3, 2: 4, learnedVersion: 6}

// readHeader reads the header of b and its length, refusing a blob that
// is not a learned state or was written with another layout.
func readHeader(b []byte) (stateHeader, int, error) {
	if len(b) < 3 || b[0] != learnedMagic {
		return stateHeader{}, 0, fmt.Errorf("%w: not a learned state (want the magic %q and a version)", ErrLearnedStateCorrupt, learnedMagic)
	}
	h := stateHeader{magic: b[0], version: b[1], bins: b[2]}
	head := headerLen[h.version]
	if head != 0 && len(b) >= head {
		// Fields a version does not write hold this autoscaler's layout.
		h.recentGaps, h.phaseGaps, h.startupsKept = recentGaps, phaseGaps, startupsKept
		if h.version >= 2 {
			h.recentGaps = b[3]
		}
		if h.version >= 3 {
			h.phaseGaps, h.startupsKept = b[4], b[5]
		}
	}
	if head == 0 || len(b) < head || int(h.bins) != gapBins || h.recentGaps != recentGaps || h.phaseGaps != phaseGaps || h.startupsKept != startupsKept {
		return stateHeader{}, 0, fmt.Errorf(
			"%w: version %d with %d bins, this autoscaler reads versions 1 to %d with %d bins (and %d latest gaps, %d phases, %d start-ups)",
			ErrLearnedStateForeign, h.version, h.bins, learnedVersion, gapBins, recentGaps, phaseGaps, startupsKept)
	}
	return h, head, nil
}

// bytes reads a count (at most most) and that many bytes, each within
// [lo, hi].
func (r *learnedReader) bytes(what string, most int, lo, hi byte) []byte {
	n := r.uvarint()
	switch {
	case r.err != nil:
		return nil
	case n > uint64(most) || n > uint64(len(r.b)):
		r.err = fmt.Errorf("%d %s, more than %d or than the bytes left", n, what, most)
		return nil
	}
	for _, x := range r.b[:n] {
		if x < lo || x > hi {
			r.err = fmt.Errorf("%s: %d out of [%d, %d]", what, x, lo, hi)
			return nil
		}
	}
	out := append([]byte(nil), r.b[:n]...)
	r.b = r.b[n:]
	return out
}

// histogram reads the non-empty bins into counts.
func (r *learnedReader) histogram(counts *[128]uint16) {
	n := r.uvarint()
	if r.err == nil && n > uint64(gapBins) {
		r.err = fmt.Errorf("%d bins, more than %d", n, gapBins)
	}
	bin := -1
	for i := uint64(0); i < n && r.err == nil; i++ {
		delta, c := r.uvarint(), r.uvarint()
		if r.err != nil {
			break
		}
		if delta >= uint64(gapBins-bin-1) || c == 0 || c > 0xffff {
			r.err = fmt.Errorf("bin %d+%d count %d out of range", bin, delta+1, c)
			break
		}
		bin += int(delta) + 1
		counts[bin] = uint16(c)
	}
}

// sequence reads the latest gaps' bins and the cold requests per gap.
func (r *learnedReader) sequence(s *learnedSnapshot) {
	n := r.uvarint()
	switch {
	case r.err != nil:
		return
	case n > recentGaps || n > uint64(len(r.b)):
		r.err = fmt.Errorf("a sequence of %d gaps, more than %d or than the bytes left", n, recentGaps)
		return
	}
	for _, bin := range r.b[:n] {
		if int(bin) >= gapBins {
			r.err = fmt.Errorf("a gap of the sequence in bin %d, out of range", bin)
			return
		}
	}
	s.recent, r.b = append([]uint8(nil), r.b[:n]...), r.b[n:]
	if c := r.uvarint(); r.err == nil {
		if c < coldPerGapScale || c > maxColdPerGap*coldPerGapScale {
			r.err = fmt.Errorf("cold requests per gap %d/16 out of range [1, %d]", c, maxColdPerGap)
			return
		}
		s.coldPerGap = uint32(c)
	}
}

// learnedReader reads varints, keeping the first error.
type learnedReader struct {
	b   []byte
	err error
}

func (r *learnedReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("truncated or overlong varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// State returns the policy's state as a blob for Restore, and its generation: a number that changes whenever the
// idle-gap history does (a gap was added), so that a caller saves only
// what changed.
func (p *Policy) State() ([]byte, uint64) {
	g := &p.gaps
	s := learnedSnapshot{counts: g.counts, coldPerGap: uint32(math.Round(min(p.coldPerGap, maxColdPerGap) * coldPerGapScale))}
	for i := range int(g.recentN) {
		bin, _ := g.recentGap(i)
		s.recent = append(s.recent, bin)
	}
	for i := range int(g.phaseN) {
		s.phases = append(s.phases, g.phases[(int(g.phaseAt)+i)%phaseGaps])
	}
	for i := range int(p.starts.n) {
		s.startups = append(s.startups, p.starts.seen[(int(p.starts.at)+i)%startupsKept])
	}
	return marshalLearned(&s), p.generation
}

// Generation is State's generation without the blob: a
// cheap check for a change.
func (p *Policy) Generation() uint64 { return p.generation }

// Restore replaces the policy's history with a blob of State (from an earlier decider of the revision: before an
// autoscaler restart, a leader failover or a configuration change). It
// returns the number of idle gaps restored. A blob that does not decode
// leaves the history as it is and returns an error wrapping
// ErrLearnedStateForeign or ErrLearnedStateCorrupt. The
// policy acts on the history from the first
// second with load the decider sees (until then Knative's rules hold a
// running replica, and a revision at zero waits for its next request, as
// the gap that spans the restore is unknown); its reasons say that the
// history was restored until the decider has seen MinGaps gaps of its own.
func (p *Policy) Restore(blob []byte) (int, error) {
	s, err := unmarshalLearned(blob)
	if err != nil {
		return 0, err
	}
	g := &p.gaps
	g.counts, g.total = s.counts, s.total()
	g.recentAt, g.recentN, g.phaseAt, g.phaseN = 0, 0, 0, 0
	for _, bin := range s.recent {
		g.push(bin, noHour)
	}
	for _, ph := range s.phases {
		g.pushPhase(ph)
	}
	p.starts = startups{}
	for _, d := range s.startups {
		p.starts.add(int64(d))
	}
	p.coldPerGap, p.burstSec = float64(s.coldPerGap)/coldPerGapScale, 0
	g.seen = false // the gap that spans the restore is not counted
	p.restored, p.sinceRestore, p.dirty = g.total > 0, 0, true
	return g.total, nil
}
