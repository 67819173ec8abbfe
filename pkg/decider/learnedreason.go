package decider

// The sentences of the learned policy's reasons (Reason.Message).

func learnedMessage(r Reason) (string, bool) {
	m, ok := learnedSentence(r)
	if ok && r.Detail == DetailRestored {
		m += " (idle-gap history restored from before an autoscaler restart)"
	}
	return m, ok
}

// RestedOnSequence reports whether a learned reason's numbers are of the
// gaps that followed a gap like the latest one (PredictorSequence's
// transition table) rather than of the whole history.
func RestedOnSequence(r Reason) bool { return r.Detail == DetailSequence }

func learnedSentence(r Reason) (string, bool) {
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
