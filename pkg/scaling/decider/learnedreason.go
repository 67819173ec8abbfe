package decider

import "ebb.dev/ebb/pkg/scaling/learned"

// The sentences of the learned policy's reasons (Reason.Message).

func learnedMessage(r Reason) (string, bool) {
	m, ok := learnedSentence(r)
	if ok && (r.Detail == detailRestored || r.Detail == detailPhaseRestored) {
		m += " (idle-gap history restored from before an autoscaler restart)"
	}
	return m, ok
}

// RestedOnSequence reports whether a learned reason's numbers are of the
// gaps that followed a gap like the latest one (the transition table)
// rather than of the whole history.
func RestedOnSequence(r Reason) bool { return r.Detail == detailSequence }

// RestedOnPhase reports whether a learned reason keeps a replica for a
// second of the minute at which the latest long gaps ended
// (learned/phase.go).
func RestedOnPhase(r Reason) bool { return r.Detail == detailPhase || r.Detail == detailPhaseRestored }

func learnedSentence(r Reason) (string, bool) {
	if RestedOnPhase(r) {
		return phaseSentence(r)
	}
	if r.Detail == detailParked && (r.Code == KeepAlive || r.Code == PreWarm) {
		gapsEndedThere, gapsThatLong := r.values[1], r.values[2]
		kind, what := "keep-alive", "the replica is kept, parked"
		if r.Code == PreWarm {
			kind, what = "pre-warm", "a replica is started, to be parked"
		}
		return kind + ": of the " + num(gapsThatLong) + " idle gaps that lasted this long, " + num(gapsEndedThere) +
			" ended within 40% more; parked, the time the rest of the gap is expected to take costs less than the cold start it spares: " + what, true
	}
	gaps := "idle gaps"
	if r.Detail == detailSequence {
		gaps = "idle gaps that followed a gap like the last one"
	}
	switch r.Code {
	case LearnedFallback:
		gapsSeen, gapsNeeded := r.values[0], r.values[1]
		return "learned scale-to-zero policy: " + num(gapsSeen) + " idle gap(s) seen, it needs " + num(gapsNeeded) + ": Knative's scale to zero applies", true
	case PreWarm:
		secondsUntil, gapsEndedThere, gapsThatLong := r.values[0], r.values[1], r.values[2]
		return "pre-warm: next request expected in about " + secs(secondsUntil) + " (" + num(gapsEndedThere) + " of the " + num(gapsThatLong) + " " + gaps +
			" and lasted this long ended within 40% more): a replica is started ahead of it", true
	case KeepAlive:
		secondsUntil, gapsEndedThere, gapsThatLong := r.values[0], r.values[1], r.values[2]
		return "keep-alive: a request is expected within about " + secs(secondsUntil) + " (" + num(gapsEndedThere) + " of the " + num(gapsThatLong) + " " + gaps +
			" and lasted this long ended within 40% more): the replica is kept", true
	case LearnedRelease:
		secondsUntil, gapsThatLong, allGaps := r.values[0], r.values[1], r.values[2]
		if secondsUntil < 0 {
			return "released: of " + num(allGaps) + " idle gaps, " + num(gapsThatLong) + " lasted this long, too few end at any later time to pay for a replica", true
		}
		return "released: no request expected before about " + secs(secondsUntil) + " (of " + num(allGaps) + " idle gaps, " + num(gapsThatLong) +
			" lasted this long): the replica goes until then", true
	}
	return "", false
}

// phaseSentence is the sentence of a PreWarm or KeepAlive for a second of
// the minute (its Values: the seconds until it, how many of the latest long
// gaps ended at it, of how many).
func phaseSentence(r Reason) (string, bool) {
	endedAtPhase, latestLongGaps := r.values[1], r.values[2]
	at := ", at the second of the minute at which " + num(endedAtPhase) + " of the latest " + num(latestLongGaps) + " idle gaps of " +
		secs(learned.PhaseMinGap) + " or more ended"
	switch r.Code {
	case PreWarm:
		secondsUntil := r.values[0]
		return "pre-warm: next request expected in about " + secs(secondsUntil) + at + ": a replica is started ahead of it", true
	case KeepAlive:
		secondsUntil := r.values[0]
		return "keep-alive: a request is expected within about " + secs(secondsUntil) + at + ": the replica is kept", true
	}
	return "", false
}
