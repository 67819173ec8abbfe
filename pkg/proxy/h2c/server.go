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
	// may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS); 0:
	// maxStreamsPerConn, which bounds what one client pins (see
	// streamReceiveWindow).
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
	streams := o.MaxConcurrentStreams
	if streams == 0 {
		streams = maxStreamsPerConn
	}
	return &http.HTTP2Config{
		MaxConcurrentStreams:      streams,
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
		HTTP2: o.http2Config(), ErrorLog: o.ErrorLog, ConnContext: withSendFlow,
	}, limits: newGuardLimits(o.MaxHeaderBytes, o.HeaderTimeout)}
}

// withSendFlow puts the ledger of a guarded connection in its context,
// where its streams' handlers find it (SendFlowOf).
func withSendFlow(ctx context.Context, c net.Conn) context.Context {
	if g, ok := c.(*headerGuard); ok && g.flow != nil {
		return context.WithValue(ctx, sendFlowKey{}, g.flow)
	}
	return ctx
}

// Serve serves the connections of l (each starts with the client preface)
// until Shutdown or Close.
func (s *Server) Serve(l net.Listener) error {
	return s.Server.Serve(guardListener{Listener: l, limits: s.limits})
}

// The memory a client can pin in a proxy through HTTP/2 flow control.
//
// A client that opens streams and grants them no window (or a trickle)
// stops its answers at the proxy, and each stream's upstream keeps
// sending until the proxy's receive window for that stream is full: the
// transport buffers it. Go's defaults (4 MiB a stream, 1 GiB a
// connection) let one client with 100 streams pin about 400 MiB in each
// proxy it goes through. So:
//
//   - each upstream stream's receive window is StreamReceiveWindow (256
//     KiB: a stream still moves 256 KiB per round trip, 250 MB/s at 1 ms,
//     far more than a pod on 127.0.0.1 needs from its app);
//   - a client connection may have MaxStreamsPerConn streams open;
//   - the transport's connection window is ConnReceiveWindow, enough for
//     256 full stream windows, so streams stalled by one client never
//     starve the other streams sharing the upstream connection (a smaller
//     one would let a stalled client block everyone behind it).
//
// One client connection therefore holds at most MaxStreamsPerConn x
// (StreamReceiveWindow + the hop's copy buffer, 32 KiB, + the server's
// write buffer, 4 KiB) = 100 x 292 KiB, about 29 MiB, in each proxy,
// whatever it asks for; TestZeroWindowMemory measures it. A stream that
// delivers nothing is reset after the write timeout
// (proxycore.ProgressWriter), which frees its share.
const (
	streamReceiveWindow = 256 << 10
	connReceiveWindow   = 256 * streamReceiveWindow
	maxStreamsPerConn   = 100
)

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
// stream limit is reached. Its receive windows are StreamReceiveWindow
// and ConnReceiveWindow: what a stream's upstream may send before the
// proxy has passed it on.
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
		HTTP2: &http.HTTP2Config{MaxReceiveBufferPerStream: streamReceiveWindow, MaxReceiveBufferPerConnection: connReceiveWindow,
			MaxReadFrameSize: 16 << 10},
	}
}
