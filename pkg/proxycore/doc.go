// Package proxycore is the hop to an upstream shared by Ebb's two proxies,
// the activator (to a replica's queue-proxy) and the queue-proxy (to its
// app): writing a request on a pooled fasthttp connection, reading a
// response head past interim 1xx answers, classifying what went wrong
// (timeout, dial, dropped connection, the client's own body), hop-by-hop
// headers, the framing checks of RFC 9112, upgrade tunnels, and the retry
// rule.
//
// # The retry rule
//
// A request the client sent once reaches an upstream at most once, with its
// whole body, or the client gets an error. A request may therefore be sent
// again (on another connection, to the same or another replica, the
// activator's re-route included) only if
//
//   - no byte of it can have reached an upstream: the dial failed, or the
//     attempt failed before anything was written. A write to a dead pooled
//     connection may "succeed" into the socket buffer, so once write was
//     called at all, bytes count as sent; or
//   - it is idempotent by method (RFC 9110 §9.2.2: GET, HEAD, OPTIONS,
//     TRACE, PUT, DELETE), its body is held in full in memory (not a stream
//     from the client, or empty), and the upstream dropped the connection
//     before answering (never after a timeout or a partial answer).
//
// A request whose streamed body was partly read is never sent again. When a
// client's body was not read to its end (the proxy gave up mid-stream, or
// never read it), the proxy closes the client's connection after answering,
// so the rest of the body is never parsed as a new request. A request with
// both Content-Length and Transfer-Encoding is answered and its connection
// closed (RFC 9112 §6.1). Outbound enforces all of this in one place; Go's
// net/http.Transport (isReplayable, rewindBody) is the model.
//
// # What it must not do
//
// It logs nothing (no zap), reads the clock only for the write deadlines
// toward clients (WriteProgressListener, ProgressWriter; every other
// deadline is the caller's), keeps no per-request state beyond what the
// caller owns (the Outbound lives in the caller's pooled exchange), and
// allocates nothing on the path of a request that succeeds. Policy stays with the proxies: how
// many times to retry, which replica to try next, the status and words of
// an answer, and the size up to which a response is read whole.
package proxycore
