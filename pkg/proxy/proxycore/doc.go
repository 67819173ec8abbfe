// Package proxycore is the hop both of Ebb's proxies run: the activator
// (to a replica's queue-proxy) and the queue-proxy (to its app). One type
// owns a request's whole trip, as Go's httputil.ReverseProxy does, and the
// proxies supply only policy (which upstream, how many tries, what to
// count, the words of their own answers).
//
//   - Trip (HTTP/1.1, fasthttp): the head for the upstream (the hop-by-hop
//     fields of RFC 9110 §7.6.1, the fields a Connection header names and
//     its close token included; X-Forwarded-For and -Proto), the attempts
//     and the retry rule, a body read whole or streamed (the Trip is the
//     body stream fasthttp writes), an upgrade only on 101, the deadlines
//     of every phase, the rule for a client body left unread (Settle,
//     DiscardBody). A proxy implements Policy on its pooled per-request
//     state, which embeds the Trip.
//   - StreamHop (HTTP/2, and net/http's HTTP/1.1): ReverseProxy configured
//     once with the same rules, each stream a Stream; a proxy implements
//     StreamPolicy.
//   - NewServer: the HTTP/1.1 server of a data port, with its client
//     deadlines, head limit (MaxRequestHeadBytes, HTTP/2's too), target
//     check (CheckTarget) and RFC 9112 §6.1's close; WriteProgressListener
//     and ProgressWriter bound every write toward a client, so a client
//     that does not read its answer loses its slot.
//   - The system calls of a hop: two reads and two writes per request.
//     The read of an upstream's answer writes the request first
//     (Outbound.Answer) and a complete answer to a client is written by
//     the read of its next request (HoldAnswer, clientreads.go), each a
//     busypoll.Turn: no read comes up empty before its peer has spoken.
//     They are raw system calls, which keep the runtime's monitor thread
//     at rest (pkg/proxy/busypoll/rawio_linux.go).
//     A client connection's read deadlines are kept while they fit,
//     instead of set again for every request (clientreads.go).
//   - Probe and ProbeAnswer: the readiness probes of the data path, both
//     ends.
//   - Clean connections (clean.go): a pooled upstream connection carries
//     a request only if nothing is waiting on it (a peek before every
//     request), nothing was left after its last answer, and that answer
//     was framed one way; ConnChecks counts the others.
//   - Request framing (framing.go, chunkext.go): a Transfer-Encoding
//     other than chunked is refused, and so is the Content-Type field
//     twice (fasthttp keeps one); a chunked body's extensions stay within
//     net/http's budget of non-data bytes.
//
// # The retry rule
//
// A request the client sent once reaches an upstream at most once, with its
// whole body, or the client gets an error. A request may therefore be sent
// again (on another connection, to the same or another upstream) only if
//
//   - no byte of it can have reached an upstream: the dial failed, or the
//     attempt failed before anything was written. A write to a dead pooled
//     connection may "succeed" into the socket buffer, so once write was
//     called at all, bytes count as sent; or
//   - it is idempotent by method (RFC 9110 §9.2.2: GET, HEAD, OPTIONS,
//     TRACE, PUT, DELETE), its body is held in full in memory (not a stream
//     from the client, or empty), and the upstream dropped the connection
//     before answering (never after a timeout or a partial answer); or
//   - the upstream is a hop of the proxy's own that proved it did not pass
//     the request on (NotSentMark: the app behind it refused the
//     connection), and its body is held in full in memory: whatever its
//     method, nothing of it reached the app.
//
// A request whose streamed body was partly read is never sent again. When a
// client's body was read in part (the proxy gave up mid-stream), the
// client's connection closes after the answer, so the rest of the body is
// never parsed as a new request; a body never read is skipped if short
// (256 KiB within a second, net/http's rule), else the connection closes. A
// request with both Content-Length and Transfer-Encoding is answered and
// its connection closed (RFC 9112 §6.1). Outbound decides the rule in one
// place; Go's net/http.Transport (isReplayable, rewindBody) is the model.
// An HTTP/2 stream goes again only when nothing of it was sent (the dial
// failed, its body unread); the transport itself resends where the
// upstream said it did not process a stream.
//
// # What it must not do
//
// It logs nothing (no zap), reads the clock only for deadlines, holds no
// lock across I/O, keeps no per-request state beyond what the caller owns
// (a Trip lives in the proxy's pooled per-request state), and allocates
// nothing on the HTTP/1.1 path of a request that succeeds. Policy stays
// with the proxies: which upstream, how many times to resend, what to
// count, the status and words of their own answers.
package proxycore
