// Package autoscaler is the autoscaler service: one goroutine per revision
// owns one decider, feeds it a sample every second (scraped from the
// revision's queue-proxies and pushed by activators), and applies its
// decisions through a Platform.
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
