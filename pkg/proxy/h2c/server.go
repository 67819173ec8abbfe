package h2c

import (
	"context"
	"log"
	"net"
	"net/http"
	"time"
)

// ServerOptions configure the HTTP/2 side of a data port.
type ServerOptions struct {
	// HeaderTimeout bounds the read of a stream's head. Must be > 0.
	HeaderTimeout time.Duration
	// IdleTimeout closes a connection with no stream open that long. Must be > 0.
	IdleTimeout time.Duration
	// MaxConcurrentStreams is the number of streams one client connection
	// may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS); 0: the
	// library's default (at least 100).
	MaxConcurrentStreams int
	// MaxHeaderBytes bounds a stream's header list (its HPACK-decoded
	// fields, as net/http counts them); a longer one is answered 431, and
	// one whose block is more than twice as long also ends the connection
	// gracefully (guard.go). 0: net/http's default (1 MB).
	MaxHeaderBytes int
	// MaxReceiveBufferPerStream is the flow-control window of a stream's
	// request body: what the server holds of a body its handler has not
	// read yet (a stream waiting in the activator's queue); 0: the
	// library's default (1 MiB).
	MaxReceiveBufferPerStream int
	// WriteTimeout bounds each write to a client: a connection that takes
	// nothing for this long is closed (WriteByteTimeout). A stream the
	// client grants no window is bounded by its handler
	// (proxycore.ProgressWriter). Must be > 0.
	WriteTimeout time.Duration
	// ErrorLog receives the server's messages (connection errors of
	// clients, mostly); nil: the standard logger.
	ErrorLog *log.Logger
}

// http2Config is the HTTP/2 configuration of o.
func (o ServerOptions) http2Config() *http.HTTP2Config {
	return &http.HTTP2Config{
		MaxConcurrentStreams:      o.MaxConcurrentStreams,
		MaxReceiveBufferPerStream: o.MaxReceiveBufferPerStream,
		WriteByteTimeout:          o.WriteTimeout,
	}
}

// Server is an HTTP/2-only server (prior knowledge, no TLS) for the
// connections Split.HTTP2 hands out: net/http's, whose Serve puts each
// connection under the header-block guard (guard.go), so that a header
// block over MaxHeaderBytes is answered 431 however long it is. Its
// Shutdown sends GOAWAY on every connection, lets the streams in flight
// finish and waits for them: the drain of a proxy.
type Server struct {
	*http.Server
	limits *guardLimits
}

// NewServer builds a Server for h (nothing starts).
func NewServer(h http.Handler, o ServerOptions) *Server {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &Server{Server: &http.Server{
		Handler: h, Protocols: &p,
		ReadHeaderTimeout: o.HeaderTimeout, IdleTimeout: o.IdleTimeout, MaxHeaderBytes: o.MaxHeaderBytes,
		HTTP2: o.http2Config(), ErrorLog: o.ErrorLog,
	}, limits: newGuardLimits(o.MaxHeaderBytes, o.HeaderTimeout)}
}

// Serve serves the connections of l (each starts with the client preface)
// until Shutdown or Close.
func (s *Server) Serve(l net.Listener) error {
	return s.Server.Serve(guardListener{Listener: l, limits: s.limits})
}

// TransportOptions configure an h2c upstream.
type TransportOptions struct {
	// DialTimeout bounds a connection's dial. Must be > 0.
	DialTimeout time.Duration
	// IdleConnTimeout closes an idle upstream connection; 0: never.
	IdleConnTimeout time.Duration
	// Dial replaces TCP (tests); nil dials TCP.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// NewTransport is an HTTP/2 cleartext upstream: http:// URLs are sent as
// HTTP/2 with prior knowledge (no Upgrade round trip). It multiplexes
// streams on few connections and opens another when a connection's
// stream limit is reached.
func NewTransport(o TransportOptions) *http.Transport {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	dial := o.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: o.DialTimeout}).DialContext
	}
	return &http.Transport{
		Protocols: &p, DialContext: dial, IdleConnTimeout: o.IdleConnTimeout,
		ForceAttemptHTTP2: true, DisableCompression: true,
		MaxIdleConnsPerHost: 16,
		HTTP2:               &http.HTTP2Config{},
	}
}
