// Package h2c is HTTP/2 over cleartext for Ebb's two proxies (the
// activator and the queue-proxy): it owns what both need to take HTTP/2
// streams next to HTTP/1.1 on one port, and to treat each stream as one
// request.
//
//   - Split sorts the connections of one listener by their first bytes:
//     the HTTP/2 connection preface (RFC 9113 §3.4, "prior knowledge")
//     goes to an HTTP/2 server, anything else to the fasthttp server,
//     which sees the bytes again as if nothing had read them.
//   - Server is the HTTP/2 side: net/http's HTTP/2 server (the same code
//     as golang.org/x/net/http2, bundled in the standard library) with
//     only unencrypted HTTP/2 enabled; Shutdown sends GOAWAY and waits for
//     the streams in flight.
//   - Both servers read their connections through a header-block guard
//     (guard.go): a header block over the limit is answered 431 however
//     long it is, where the HTTP/2 server alone would end the connection.
//   - UpgradeServer takes an HTTP/1.1 request with "Upgrade: h2c" from a
//     fasthttp handler (Take): it answers 101 and serves the connection as
//     HTTP/2 with golang.org/x/net/http2, the request being stream 1.
//   - NewTransport is the h2c upstream (prior knowledge, no TLS), with
//     receive windows that bound what a client granting no window pins in
//     a proxy (StreamReceiveWindow, server.go).
//   - The guard also counts a client's stream resets (reset.go): a Rapid
//     Reset flood loses its connection.
//   - Timeout reads gRPC's grpc-timeout header; WriteError answers a
//     stream the proxy could not forward, as a gRPC status for gRPC
//     clients (a trailers-only response) and as an HTTP status otherwise.
//
// # What it must not do
//
// It logs nothing and keeps no per-request state of its own: accounting,
// breakers, queueing and which replica to use stay with the proxies. The
// retry rule is pkg/proxy/proxycore's: an HTTP/2 stream is sent again only when
// the upstream said it did not process it (a GOAWAY whose last stream ID
// is below it, or REFUSED_STREAM; the transport does this by itself, and
// only for a request whose body it has not begun to send).
package h2c
