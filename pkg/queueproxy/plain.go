package queueproxy

import (
	"context"
	"net"
	"net/http"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/proxy/connlimit"
	"ebb.dev/ebb/pkg/proxy/proxycore"
)

// With QUEUE_UPSTREAM_PROTOCOL=h2c (an app that speaks only HTTP/2
// cleartext, Knative's port named h2c), the HTTP/1.1 connections of the
// serving port are served by net/http instead of fasthttp, with the HTTP/2
// path's handler (h2.go): each request is one stream to the app, with the
// same probes, marker, accounting, breaker, timeouts and metrics. The
// ReverseProxy drops the hop-by-hop headers, streams the body both ways
// and turns the app's trailers into chunked trailers; its transport
// retries only what net/http's does (nothing of the request written, or a
// replayable one), the retry rule of pkg/proxy/proxycore. An upgrade (websocket)
// cannot cross to HTTP/2 and is answered 502. The default (http1) path is
// fasthttp's, untouched.

// newPlainServer is the HTTP/1.1-only server of the h2c upstream mode,
// with the limits of the fasthttp server it replaces.
func newPlainServer(c Config, h http.Handler, log *zap.Logger) *http.Server {
	var p http.Protocols
	p.SetHTTP1(true)
	return &http.Server{
		Handler: h, Protocols: &p,
		ReadHeaderTimeout: c.HeaderTimeout, IdleTimeout: c.ClientIdleTimeout,
		// The head within QUEUE_HEADER_TIMEOUT_SECONDS, then the body
		// within REVISION_TIMEOUT_SECONDS, as on the default path.
		ReadTimeout:    c.HeaderTimeout + c.RequestTimeout,
		MaxHeaderBytes: proxycore.MaxRequestHeadBytes, // as on the default path
		ErrorLog:       debugStdLog(log),
	}
}

// serveHTTP1 serves the HTTP/1.1 connections of the serving port; each
// write to a client must complete within QUEUE_CLIENT_WRITE_TIMEOUT_SECONDS.
func (q *QueueProxy) serveHTTP1(ln net.Listener) error {
	ln = proxycore.WriteProgressListener(ln, q.cfg.ClientWriteTimeout)
	if q.plain == nil {
		return q.serving.Serve(ln)
	}
	return serveStreams(q.plain, connlimit.Listen(ln, connlimit.Options{Max: q.cfg.MaxConns}))
}

// shutdownHTTP1 stops accepting HTTP/1.1 connections and waits for their
// requests.
func (q *QueueProxy) shutdownHTTP1(ctx context.Context) error {
	if q.plain == nil {
		return q.serving.ShutdownWithContext(ctx)
	}
	return q.plain.Shutdown(ctx)
}

func (q *QueueProxy) closePlain() error {
	if q.plain == nil {
		return nil
	}
	return q.plain.Close()
}
