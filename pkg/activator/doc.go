// Package activator is the front door of revisions that have no ready
// replica, or too little spare capacity: it routes each request to its
// revision by Host, holds it within bounds until a replica can take it,
// wakes the autoscaler, throttles to each replica's capacity and proxies.
// Knative's activator is the model (pkg/activator/net/throttler.go,
// lb_policy.go, revision_backends.go, handler/*); docs/activator.md
// describes the behaviour and the differences.
//
// # What it owns
//
//   - The routing table: an immutable snapshot (routeTable) behind an
//     atomic pointer, rebuilt by apply from the platform's complete list of
//     revisions and replicas (Platform, declared here).
//   - Per revision, a throttle: an immutable replica set (this activator's
//     subset of the replicas, each with an atomic in-flight count and this
//     activator's capacity on it) and a FIFO queue bounded in requests and bytes,
//     per revision and activator-wide (QueueLimits). The fast path (a free
//     slot, nobody waiting) takes no lock.
//   - Probing: a replica the platform lists but has not seen ready is
//     probed every ProbeInterval (5ms by default) with the queue-proxy's
//     probe header and gets traffic as soon as it answers.
//   - Load reports: per revision, time-weighted concurrency and arrivals
//     (pkg/stats Accounting), sent every ReportPeriod to a StatSink
//     (declared here), plus an immediate poke for a revision at zero.
//   - Per-replica fasthttp HostClients in an LRU cache, whose pools the
//     hop uses. The hop itself is pkg/proxy/proxycore's, shared with the
//     queue-proxy (proxycore.Trip for HTTP/1.1, StreamHop for HTTP/2: the
//     head for the replica, attempts and the retry rule, bodies, upgrades,
//     deadlines); the warm path allocates nothing. The activator is its
//     policy (the exchange, exchange.go): which replica, the resend to
//     another (forward.go: MaxRetries, re-routing, dial errors not
//     counted), counting, its answers.
//
// The request path by file: serve.go (entry, routing by Host or header),
// admit.go (admission, the queue, refusals), exchange.go (the request's
// state and the hop's policy), forward.go (the hop and the resend),
// h2.go (the HTTP/2 side).
//
// # What it must not do
//
// It does not know the platform or the autoscaler's transport: both are
// interfaces implemented elsewhere and wired in cmd/activator. It never
// holds a request without a bound (queue count, queue bytes, queue
// timeout, request timeout), never holds a lock across I/O, and never logs
// per request above Debug. It never keeps a fasthttp RequestCtx after the
// handler returns, except through fasthttp's own body-stream and hijack
// hooks.
//
// # Concurrency
//
// Requests read snapshots; the control plane (apply, probe results,
// connection failures) mutates under controlPlane.mu and publishes new
// snapshots. Every goroutine started by Run (platform watch, reporter,
// probe loops, the client watch that notices clients leaving the queue,
// the server, websocket tunnels) is waited for before Run returns, the
// tunnels up to the drain timeout.
package activator
