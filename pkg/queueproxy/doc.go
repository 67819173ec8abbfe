// Package queueproxy is the sidecar that runs beside every replica and sits
// on the path of every request: a fasthttp server on the serving port that
// proxies to the app on 127.0.0.1:$USER_PORT through a fasthttp HostClient's
// connection pool.
//
// It owns, per process: the concurrency limit (pkg/proxy/breaker), the load
// accounting and the per-second Stat (pkg/stats), the readiness of the app,
// the timeouts, and the drain on SIGTERM. It must not import the other
// adapters (autoscaler, activator, platforms) nor anything from k8s.io
// (make check-imports), and it must not allocate per request on the hot
// path (BenchmarkProxy reports 0 allocs/op).
//
// # Request path
//
//  1. A request with K-Network-Probe: queue (or a kubelet probe,
//     User-Agent kube-probe/...) is answered from readiness: 200 "queue"
//     when ready, 503 otherwise. It is not counted and never reaches the
//     app.
//  2. Every other request is counted in (with K-Proxy-Request: activator
//     SECRET, the ACTIVATOR_PROXY_SECRET, also as proxied; marker.go) before
//     the breaker, so queued requests count as concurrency, and counted out
//     after its last response byte. The marker never reaches the app.
//  3. With CONTAINER_CONCURRENCY > 0 the breaker admits that many at once
//     and queues 10× more in FIFO order; beyond that: 503 with Retry-After: 1
//     and a body naming the limit. With 0 there is no breaker at all.
//  4. The hop is pkg/proxy/proxycore's, the activator's too (proxycore.Trip for
//     HTTP/1.1, StreamHop for HTTP/2): X-Forwarded-For gets the client
//     address appended, X-Forwarded-Proto is set unless present, the
//     hop-by-hop fields are dropped (RFC 9110 §7.6.1), the request goes to
//     the app over a pooled keep-alive connection, bodies over 64 KiB
//     stream both ways and smaller ones are buffered, Connection: Upgrade
//     requests (websockets) get their own connection and, on 101 only, a
//     spliced tunnel that counts as in flight until it closes; a request
//     is sent again only if nothing of it was written, or it is idempotent
//     with its body in memory (the retry rule). The queue-proxy is the
//     hop's policy (exchange.go): one upstream, its timeouts, accounting,
//     its answers.
//
// # Timeouts
//
// All three run from arrival, queueing included, as Knative's:
// REVISION_TIMEOUT_SECONDS bounds the whole request;
// REVISION_RESPONSE_START_TIMEOUT_SECONDS bounds the wait for the response
// head; REVISION_IDLE_TIMEOUT_SECONDS bounds any silence of the app, before
// and within the response. Before the response started, a timeout answers
// 504 with a body naming it; after, the client connection is cut.
//
// # Admin port
//
// QUEUE_ADMIN_PORT serves GET /stats (the latest stats.Stat in the wire
// format of pkg/stats, media type application/vnd.ebb.stat.v1, cut every
// second), GET /metrics (Prometheus text: the same numbers, request
// duration histograms by status class, rejections, Go and process metrics)
// and GET /healthz (200 when ready, 503 otherwise; with K-Network-Probe:
// queue it answers "queue").
//
// # Readiness and drain
//
// The app is probed every 50 ms until its first success, then every
// READINESS_PROBE_PERIOD_SECONDS; READINESS_FAILURE_THRESHOLD failures in a
// row make it not ready. On SIGTERM readiness fails at once; the proxy keeps
// serving for DRAIN_PERIOD_SECONDS, then stops accepting connections, lets
// every in-flight request finish (up to REVISION_TIMEOUT_SECONDS) and
// exits 0 (with QUEUE_AWAIT_APP_EXIT_SECONDS, once the app stops accepting
// connections: the kubelet's probe, GET /readyz on the admin port, passes
// until then; and, if the kubelet probes it, just after answering its next
// probe, at most 2 s later).
//
// # Configuration
//
// Every setting is an environment variable and a flag (the flag wins, then
// the variable, an empty one counting as unset, then the default: the
// pkg/envconfig table the activator uses too); a bad value stops the
// process at start with a message naming the variable, where the value
// came from, the value and the rule. docs/queueproxy.md has the same table.
//
//	QUEUE_SERVING_PORT (--queue-serving-port), default 8012
//	    port the proxy listens on for requests
//	QUEUE_ADMIN_PORT (--queue-admin-port), default 9090
//	    port of /stats, /metrics and /healthz
//	USER_PORT (--user-port), default 8080
//	    port of the app on 127.0.0.1
//	CONTAINER_CONCURRENCY (--container-concurrency), default 0, [0, 10000]
//	    requests the app may serve at once; 0: no limit and no breaker
//	REVISION_TIMEOUT_SECONDS (--revision-timeout-seconds), default 300
//	    longest a request may take, queueing included; decimals allowed
//	REVISION_RESPONSE_START_TIMEOUT_SECONDS (--revision-response-start-timeout-seconds), default 0
//	    longest wait for the response head; 0: the request timeout
//	REVISION_IDLE_TIMEOUT_SECONDS (--revision-idle-timeout-seconds), default 0
//	    longest silence of the app; 0: none
//	DRAIN_PERIOD_SECONDS (--drain-period-seconds), default 30
//	    time to keep serving after SIGTERM with readiness failed
//	QUEUE_AWAIT_APP_EXIT_SECONDS (--queue-await-app-exit-seconds), default 0
//	    after the drain, stay up until the app stops accepting connections, at most this long,
//	    then until the kubelet's next probe (at most 2 s)
//	SERVING_POD (--serving-pod), default the host name
//	    pod name in the stats
//	SERVING_NAMESPACE (--serving-namespace), default empty
//	    the revision's namespace (Knative's; needed with SERVING_REVISION)
//	SERVING_REVISION (--serving-revision), default empty
//	    the revision's name, as Knative's (namespace/name is read too);
//	    the stats carry namespace/name, the metrics two labels
//	SERVING_CONFIGURATION (--serving-configuration), default the revision's name
//	    the revision's Knative Configuration (configuration_name)
//	SERVING_SERVICE (--serving-service), default empty
//	    the revision's Knative Service (service_name; "unknown" when empty)
//	READINESS_PROBE_PATH (--readiness-probe-path), default empty
//	    empty: TCP connect to USER_PORT; a path: HTTP GET, 2xx/3xx is ready
//	READINESS_PROBE_PERIOD_SECONDS (--readiness-probe-period-seconds), default 1
//	READINESS_PROBE_TIMEOUT_SECONDS (--readiness-probe-timeout-seconds), default 1
//	READINESS_FAILURE_THRESHOLD (--readiness-failure-threshold), default 3
//	LOG_LEVEL (--log-level), default info: debug, info, warn or error
//	BUSY_POLL_MICROSECONDS (--busy-poll-microseconds), default 100: how long a
//	  read polls its socket before it sleeps while nearly idle (0: never)
//	QUEUE_BIND_ADDRESS (--queue-bind-address), default empty: every interface
//	QUEUE_HEADER_TIMEOUT_SECONDS (--queue-header-timeout-seconds), default 10:
//	  longest read of a request head (from accept, or a keep-alive request's
//	  first byte); a body then has REVISION_TIMEOUT_SECONDS, an upgrade no limit
//	QUEUE_CLIENT_IDLE_TIMEOUT_SECONDS (--queue-client-idle-timeout-seconds), default 90
//	QUEUE_CLIENT_WRITE_TIMEOUT_SECONDS (--queue-client-write-timeout-seconds), default 30:
//	  longest a client may take nothing of its answer (HTTP/2: each 16 KiB); one that
//	  stops reading is disconnected (HTTP/2: its stream reset) and its slot freed
//	QUEUE_MAX_CONNS (--queue-max-conns), default 1024: serving connections at once
//	QUEUE_ADMIN_MAX_CONNS (--queue-admin-max-conns), default 64
//	QUEUE_UPSTREAM_PROTOCOL (--queue-upstream-protocol), default http1: the
//	  protocol to the app; h2c sends every request as HTTP/2 cleartext,
//	  HTTP/1.1 clients' too (plain.go); set for a container port named h2c
//	ACTIVATOR_PROXY_SECRET (--activator-proxy-secret), default empty: the
//	  secret an activator's K-Proxy-Request marker must carry to count
//	  (empty: never counted)
package queueproxy
