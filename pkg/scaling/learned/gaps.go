package learned

import (
	"math"
	"time"
)

// The learned policy's memory of a revision's idle gaps (the seconds
// between two seconds with load, when at least one second without load
// lies between them): a histogram of every gap (halved when it holds
// maxGaps, so old behaviour fades), and the sequence of the latest
// recentGaps gaps, each with the hour of the day it ended in, which the
// predictor reads for the order of gaps.

const (
	// MinGaps is the history the policy needs before it overrides
	// Knative's behaviour.
	MinGaps = 5
	// maxGaps is the count at which every bin is halved.
	maxGaps = 2000
	// maxGap is where the last bin starts: gaps of 4 hours or more are
	// counted but never kept for (Shahrad et al.'s histogram range).
	maxGap = 4 * 60 * 60
	// recentGaps is the length of the sequence of latest gaps.
	recentGaps = 128
)

// gapEdges are the lower edges of the bins, in seconds: one second wide up
// to 10 s, then about 10% wide (a margin of 10% as in Shahrad et al.), up to
// maxGap, which starts the last, unbounded bin.
var gapEdges = func() []int64 {
	edges := []int64{2}
	for e := int64(2); e < maxGap; {
		e = max(e+1, int64(math.Ceil(float64(e)*1.1)))
		edges = append(edges, min(e, maxGap))
	}
	return edges
}()

// gapBins is the number of bins (at most 128: the keep set is 2 words).
var gapBins = len(gapEdges)

// idleGaps is the learned policy's state: one per revision, owned by its
// decider.
type idleGaps struct {
	counts [128]uint16
	total  int
	// recent holds the bins of the latest gaps in order, the oldest first
	// from recentAt (a ring of recentN of them), and recentHour the hour
	// of the day (UTC) each ended in.
	recent     [recentGaps]uint8
	recentHour [recentGaps]uint8
	recentAt   uint8
	recentN    uint8
	// phases holds the second of the minute in which each of the latest
	// phaseGaps long gaps (PhaseMinGap or more) ended: a ring of phaseN
	// of them, the oldest at phaseAt (phase.go).
	phases   [phaseGaps]uint8
	phaseAt  uint8
	phaseN   uint8
	lastBusy int64 // unix second of the last second with load
	seen     bool  // a second with load was seen
	// keepPhases[b] is how many seconds of the minute bin b is worth a
	// replica at: those of phaseRank below it (0: none; everyPhase: all
	// of them). Recomputed when a gap is added, with phaseRank.
	keepPhases [128]uint8
	phaseRank  [60]uint8
	// parkPhases is keepPhases for a parked replica (Policy.parkedCost):
	// the bins worth one at the parked cost, a superset of keepPhases'.
	// All zero while parking is off.
	parkPhases [128]uint8
	// cmp is the Comparison in use (compare.go): nil otherwise.
	cmp *comparison
}

// gapBin returns the bin of an idle gap (or idle time) of g seconds, g >= 2.
func gapBin(g int64) int {
	lo, hi := 0, gapBins-1
	for lo < hi { // the last edge <= g
		mid := (lo + hi + 1) / 2
		if gapEdges[mid] <= g {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// Bins is the number of the histogram's bins, BinOf the bin of a gap of
// g seconds (g >= 2) and BinEdge the lower edge of bin b in seconds: the
// policy's bins, for Comparisons that count gaps on them (Hazards).
func Bins() int { return gapBins }

// BinOf returns the bin of a gap of g seconds (Bins).
func BinOf(g int64) int { return gapBin(g) }

// BinEdge returns the lower edge of bin b in seconds (Bins); BinEdge(Bins()-1)
// is MaxGap.
func BinEdge(b int) int64 { return gapEdges[b] }

// MaxGap is where the histogram's last, unbounded bin starts (seconds).
const MaxGap = maxGap

// noHour is the hour of a gap restored from a blob without hours.
const noHour = 255

// hourOf is the hour of the day (UTC) of unix second sec.
func hourOf(sec int64) uint8 { return uint8((sec%86400 + 86400) % 86400 / 3600) }

// observe takes one second with data, busy when it had load, and reports
// whether it ended a gap.
func (h *idleGaps) observe(now time.Time, busy bool) bool {
	if !busy {
		return false
	}
	sec := now.Unix()
	added := h.seen && sec-h.lastBusy >= 2
	if added {
		g := sec - h.lastBusy
		if g >= PhaseMinGap {
			h.pushPhase(phaseOf(sec))
		}
		h.add(g, hourOf(sec))
	}
	if !h.seen || sec > h.lastBusy {
		h.lastBusy, h.seen = sec, true
	}
	return added
}

// add counts a gap of g seconds that ended in the hour of the day hour.
func (h *idleGaps) add(g int64, hour uint8) {
	if h.total >= maxGaps {
		h.total = 0
		for b := range gapBins {
			h.counts[b] /= 2
			h.total += int(h.counts[b])
		}
	}
	b := gapBin(g)
	h.counts[b]++
	h.total++
	if h.cmp != nil {
		h.cmp.c.Add(g)
	}
	h.push(uint8(b), hour)
}

// push appends a gap's bin and hour to the sequence, dropping the oldest
// when it is full.
func (h *idleGaps) push(bin, hour uint8) {
	i := (int(h.recentAt) + int(h.recentN)) % recentGaps
	h.recent[i], h.recentHour[i] = bin, hour
	if h.recentN < recentGaps {
		h.recentN++
	} else {
		h.recentAt = uint8((int(h.recentAt) + 1) % recentGaps)
	}
}

// recentGap returns the i-th gap of the sequence, the oldest first.
func (h *idleGaps) recentGap(i int) (bin, hour uint8) {
	j := (int(h.recentAt) + i) % recentGaps
	return h.recent[j], h.recentHour[j]
}

// kept reports whether bin b is worth a replica at some second of the
// minute.
func (h *idleGaps) kept(b int) bool { return h.keepPhases[b] > 0 }

// bits are the keep bits of an awake replica (keepPhases) or, when
// parked, of a parked one (parkPhases).
func (h *idleGaps) bits(parked bool) *[128]uint8 {
	if parked {
		return &h.parkPhases
	}
	return &h.keepPhases
}

// keptIn returns the first second of idle time within [from, to] (from
// at least 2) worth a replica, awake or parked (bits), and its bin; ok is
// false when there is none.
func (h *idleGaps) keptIn(from, to int64, parked bool) (sec int64, bin int, ok bool) {
	if h.cmp != nil {
		return h.cmp.keptIn(from, to)
	}
	keep := h.bits(parked)
	for b := gapBin(from); b < gapBins-1 && gapEdges[b] <= to; b++ {
		m := keep[b]
		if m == 0 {
			continue
		}
		lo, hi := max(from, gapEdges[b]), min(to, gapEdges[b+1]-1)
		if m >= everyPhase {
			return lo, b, true
		}
		for s := lo; s <= hi && s < lo+60; s++ { // a minute holds every phase
			if h.phaseRank[phaseOf(h.lastBusy+s)] < m {
				return s, b, true
			}
		}
	}
	return 0, -1, false
}

// survivors is the number of gaps in bins b and above.
func (h *idleGaps) survivors(b int) int {
	n := 0
	for ; b < gapBins; b++ {
		n += int(h.counts[b])
	}
	return n
}
