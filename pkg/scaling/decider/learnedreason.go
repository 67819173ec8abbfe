package decider

import "ebb.dev/ebb/pkg/scaling/learned"

// The sentences of the learned policy's reasons (Reason.Message).

func learnedMessage(r Reason) (string, bool) {
	m, ok := learnedSentence(r)
	if ok && (r.Detail == DetailRestored || r.Detail == DetailPhaseRestored) {
		m += " (idle-gap history restored from before an autoscaler restart)"
	}
	return m, ok
}

// RestedOnSequence reports whether a learned reason's numbers are of the
// gaps that followed a gap like the latest one (the transition table)
// rather than of the whole history.
func RestedOnSequence(r Reason) bool { return r.Detail == DetailSequence }

// RestedOnPhase reports whether a learned reason keeps a replica for a
// second of the minute at which the latest long gaps ended
// (learned/phase.go).
func RestedOnPhase(r Reason) bool { return r.Detail == DetailPhase || r.Detail == DetailPhaseRestored }

func learnedSentence(r Reason) (string, bool) {
	if RestedOnPhase(r) {
		return phaseSentence(r)
	}
	gaps := "idle gaps"
	if r.Detail == DetailSequence {
		gaps = "idle gaps that followed a gap like the last one"
	}
	switch r.Code {
	case LearnedFallback:
		return "learned scale-to-zero policy: " + num(r.A) + " idle gap(s) seen, it needs " + num(r.B) + ": Knative's scale to zero applies", true
	case PreWarm:
		return "pre-warm: next request expected in about " + secs(r.A) + " (" + num(r.B) + " of the " + num(r.C) + " " + gaps +
			" and lasted this long ended within 40% more): a replica is started ahead of it", true
	case KeepAlive:
		return "keep-alive: a request is expected within about " + secs(r.A) + " (" + num(r.B) + " of the " + num(r.C) + " " + gaps +
			" and lasted this long ended within 40% more): the replica is kept", true
	case LearnedRelease:
		if r.A < 0 {
			return "released: of " + num(r.C) + " idle gaps, " + num(r.B) + " lasted this long, too few end at any later time to pay for a replica", true
		}
		return "released: no request expected before about " + secs(r.A) + " (of " + num(r.C) + " idle gaps, " + num(r.B) +
			" lasted this long): the replica goes until then", true
	}
	return "", false
}

// phaseSentence is the sentence of a PreWarm or KeepAlive for a second of
// the minute (B of the latest C long gaps ended at it).
func phaseSentence(r Reason) (string, bool) {
	at := ", at the second of the minute at which " + num(r.B) + " of the latest " + num(r.C) + " idle gaps of " +
		secs(learned.PhaseMinGap) + " or more ended"
	switch r.Code {
	case PreWarm:
		return "pre-warm: next request expected in about " + secs(r.A) + at + ": a replica is started ahead of it", true
	case KeepAlive:
		return "keep-alive: a request is expected within about " + secs(r.A) + at + ": the replica is kept", true
	}
	return "", false
}
