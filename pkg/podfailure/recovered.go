package podfailure

import "time"

// RecoverSettle is how long a replica of a revision whose pods crashed
// after serving stays ready before the revision counts as recovered, by
// default (Recovered's settle): longer than a crash loop's runs between
// two crashes, short enough that a fixed app is soon seen as such.
const RecoverSettle = 30 * time.Second

// Recovered says whether a revision that failed with f has recovered: a
// pod is ready, and for a crash after start (f.AfterStart) it was made
// from another pod template than the failing one (a fix rolled out) or
// has stayed ready for settle. A replica ready for a moment between two crashes (a crash
// loop whose app serves a while, then dies) has not: the failure stays,
// so its state, Events and the RevisionAutoscaler do not flip at every
// crash. recheck, when > 0, is how long after now the answer may change
// with no news from the cluster (a ready pod reaches settle).
func Recovered(pods []Pod, f Failure, now time.Time, settle time.Duration) (ok bool, recheck time.Duration) {
	for i := range pods {
		p := &pods[i]
		if !p.Ready || p.Deleting {
			continue
		}
		if !f.AfterStart() || p.Template != f.Template || f.Template == "" || p.ReadySince.IsZero() {
			return true, 0
		}
		left := p.ReadySince.Add(settle).Sub(now)
		if left <= 0 {
			return true, 0
		}
		if recheck == 0 || left < recheck {
			recheck = left
		}
	}
	return false, recheck
}
