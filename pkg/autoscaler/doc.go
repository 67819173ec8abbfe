// Package autoscaler is the autoscaler service: one decider per revision,
// fed a sample every second (scraped from the revision's queue-proxies and
// pushed by activators), its decisions applied through a Platform.
//
// A revision has no goroutine of its own. The schedule (schedule.go) asks
// each revision to close its seconds at its phase, a hash of its key that
// spreads the revisions' work over the second; a pool of workers
// (runqueue.go) runs the revisions that have work, one worker at a time
// per revision, which owns the revision meanwhile (revision.go). Closing a
// second (close.go, step.go) reads the pods, scrapes a sample, takes the
// activator reports and steps the decider through secondloop.Loop, the loop
// whatif runs too (which holds a scale to zero for late reports): it is the
// whole work of a revision's second, and the time it runs at is the
// schedule's business.
// A revision at zero without traffic rests (decider.Stepper.Rest): off the
// schedule, it costs nothing until a report, a change of its
// configuration, its periodic look at its pods or the learned policy's
// pre-warm wakes it, and the seconds it slept change nothing.
//
// It owns the revisions' runtime state, the decision history served over
// HTTP, and recordings of the samples it fed the deciders (scenario files
// that replay through `autoscaler simulate` to the same decisions, because
// the live loop and the replay share decider.Stepper).
//
// It declares what it needs from the outside as interfaces (Platform,
// Scraper, Clock) and implements none of them: the platforms and the scrape
// client live elsewhere and are wired in cmd/autoscaler. It must not import
// a platform package.
package autoscaler
