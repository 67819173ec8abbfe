// Package faultfleet is the fault harness of the bucket fence: its tests
// run the real leader.Buckets of several replicas, and their scale writes
// through the real clients (kubernetes.ClientsFor: the production rate
// limiter and fence.Transport), against a fake API server that delays,
// throttles and fails calls, while replicas stop, hand off, have their
// Leases deleted by hand, pause between the fence's check and the wire
// (before the HTTP client or inside it), have their watches stall, and
// have their wall clocks stepped or their monotonic clocks stopped (a
// suspension). At every scale write that lands the
// fake API server checks its own Lease record of the revision's bucket:
// it must not name another replica than the writer.
//
// It holds tests only; nothing imports it.
package faultfleet
