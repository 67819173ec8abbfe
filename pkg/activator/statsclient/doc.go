// Package statsclient sends the activator's load reports to the
// autoscaler over HTTP: every batch (one reporting period) and every poke
// is one POST of a stats batch (pkg/stats BatchContentType) to
// AUTOSCALER_URL/v1/stats, or, when several autoscaler replicas share the
// revisions (Options.Router, on a cluster), one POST per bucket to the
// replica that holds it (route.go). docs/activator.md states the contract.
//
// It implements activator.StatSink without ever blocking the request
// path: Report and Poke queue into bounded channels and drop (counting)
// when full; Run's two senders (pokes apart, so a slow report never delays
// a wake-up) do the I/O. Failures are logged at Warn at most once per
// WarnEvery, with the counts since the last warning. To one autoscaler
// nothing is retried, since the next period's report supersedes a lost
// one; routed by bucket, a report not taken because its bucket was
// changing hands waits (bounded) for the next holder, so that a wake-up
// sent during a failover is not lost.
//
// Every POST carries the activator's credentials as Authorization: Bearer
// (Options.TokenFile, re-read every TokenReload and after a 401 so a
// rotated projected ServiceAccount token is picked up). The token is never
// logged, not even in errors.
package statsclient
