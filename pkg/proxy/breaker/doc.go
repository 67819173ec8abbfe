// Package breaker owns the hard concurrency limit on the request path: a
// semaphore of Capacity slots in front of a bounded FIFO queue, with
// Knative's breaker semantics (pkg/queue/breaker.go): at most Capacity
// requests run, up to QueueDepth more wait in arrival order, and beyond that
// Reserve fails at once with ErrQueueFull; a waiter whose context ends leaves
// the queue with the context's error.
//
// It is in the pure tier: standard library only, no I/O, no clock (the
// caller's context carries any deadline). The queue-proxy uses one Breaker
// per process with Capacity = containerConcurrency and QueueDepth =
// 10 × containerConcurrency; containerConcurrency 0 means no Breaker at all.
// The activator can reuse it per revision and follow the replica count with
// SetCapacity.
//
// The fast path (a free slot, nobody waiting) is one compare-and-swap and
// no allocation; BenchmarkReserveRelease measures it against a channel
// semaphore.
package breaker
