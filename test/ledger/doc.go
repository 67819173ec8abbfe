// Package ledger is the data path's ledger suite: it proves, with the real
// queue-proxy and activator on 127.0.0.1, that a request the client sent
// once reaches an app at most once (unless its method is idempotent), with
// its whole body, or the client gets an error; and that no request is ever
// made up from the bytes of another one's body (smuggled).
//
// The suite is in the package's tests (go test ./test/ledger, part of
// make test); the package has no code of its own. Its pieces:
//
//   - app_test.go: a test app on a raw TCP listener, parsing requests with
//     net/http's reader, that records every request it executes (the
//     client's Ledger-Id, the body's length and SHA-256) in a ledger, and
//     misbehaves on purpose: it closes the connection after reading a POST
//     without answering, closes keep-alive connections idle for 300ms, is
//     killed (listener and connections closed, then restarted on the same
//     address) when given requests arrive, answers slowly.
//   - front_test.go: the one place that wires the queue-proxy and the
//     activator (in-process, through their public constructors) into the
//     three routes: client -> queue-proxy -> app, client -> activator ->
//     app, client -> activator -> queue-proxy -> app. It can crash a
//     queue-proxy (listener and connections closed) and start another on
//     its address, so the activator's pooled connections go stale.
//   - client_test.go: a raw HTTP/1.1 client with exact framing (fixed
//     length or chunked), bodies from 0 bytes to 1 MiB made of embedded
//     requests (GET /smuggled), so a truncated body turns into requests
//     the app can see.
//   - ledger_test.go: the scenarios, the assertions and the summary table
//     (go test -v ./test/ledger shows it).
//   - slowreader_test.go: clients that do not read their answer (HTTP/1.1
//     and HTTP/2, through each proxy) lose their slots within the write
//     timeout, and the other clients of the revision are served; an
//     HTTP/2 client that reads steadily but slowly keeps its stream
//     through each route.
//   - headers_test.go: what each route does with a head: a refused upgrade
//     keeps the connection HTTP/1.1, two X-Forwarded-For lines become one,
//     the fields a Connection header names never pass, huge heads get 431
//     (HTTP/2 as HTTP/1.1), a flood of empty CONTINUATION frames closes
//     the connection.
//   - truncated_test.go: a body whose client stops (FIN or RST) before
//     its framing's end (between two chunks, within one, in the trailer
//     section, short of its Content-Length) reaches the app as a read
//     error, never a whole shorter body, through each route; a whole
//     chunked body followed at once by the client's FIN is executed.
//   - fuzz_test.go, fuzzh2_test.go, rig_test.go: the differential fuzzers
//     (FuzzDifferentialHTTP1, FuzzDifferentialH2): the same bytes to a
//     reference net/http server and through each route to the same app;
//     their seeds (testdata/fuzz and f.Add) run in make test. The proxies
//     and apps stay up across inputs (the rig), so -fuzz runs hundreds of
//     inputs a second; besides what the apps saw, each input is checked
//     for what it leaves behind (goroutines, heap, connections held).
//   - fuzzowner_test.go: FuzzAnswerOwner fuzzes the app's side: a raw app
//     whose answers the input frames (bodies on HEAD, 204 and 304,
//     Content-Length with chunked, stray answers after an answer, at once
//     or once the connection is pooled); every byte the app writes names
//     the request it answers, and no client may get another's.
//   - trailersonly_test.go: gRPC through each route with a grpc-go client:
//     an app's error status (a Trailers-Only response) reaches the client
//     every time, as one HEADERS frame; a stream's messages are flushed at
//     once.
//   - crash_test.go: an app that exits after a number of requests (its
//     port then refuses connections; restarted after a while, or never),
//     under 12 clients through activator+queue-proxy with one and three
//     replicas: a GET never fails, a POST fails only if it was at the app
//     when it died; a request that never reached the app is sent to
//     another replica or held (the queue-proxy's Ebb-Not-Sent proof).
//
// Misbehaviours are decided by the request (its method, its id), never by
// racing timers, so a run on a loaded machine is only slower, not
// different. The suite must not sleep to assert, reach beyond 127.0.0.1, or
// run unbounded: every connection has a deadline and every scenario a
// fixed number of requests.
package ledger
