package h2c

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"sync"

	"golang.org/x/net/http2"
)

// UpgradeServer serves the connections a proxy switched to HTTP/2 after
// an HTTP/1.1 request with "Upgrade: h2c" (RFC 7540 §3.2: the request is
// answered 101, then becomes stream 1 of the HTTP/2 connection). RFC 9113
// deprecates the upgrade, and gRPC clients never send it (they use prior
// knowledge), but some HTTP/2 clients (curl --http2) still do.
// golang.org/x/net/http2 serves them: the standard library's HTTP/2
// server has no entry point for an upgraded connection.
type UpgradeServer struct {
	h2      *http2.Server
	base    *http.Server // ConfigureServer hooked its Shutdown: GOAWAY on every connection of h2
	limits  *guardLimits // the header-block guard's (guard.go)
	handler http.Handler

	mu     sync.Mutex            // guards conns and closed
	conns  map[net.Conn]struct{} // the connections being served
	closed bool                  // Shutdown began: no new connection
	wg     sync.WaitGroup        // one per connection being served
}

// NewUpgradeServer builds an UpgradeServer for h (nothing starts).
func NewUpgradeServer(h http.Handler, o ServerOptions) (*UpgradeServer, error) {
	base := &http.Server{Handler: h, ReadHeaderTimeout: o.HeaderTimeout, IdleTimeout: o.IdleTimeout,
		MaxHeaderBytes: o.MaxHeaderBytes, HTTP2: o.http2Config(), ErrorLog: o.ErrorLog}
	// The limits are base's (its HTTP2 field), which ServeConn reads too.
	h2s := &http2.Server{IdleTimeout: o.IdleTimeout}
	if err := http2.ConfigureServer(base, h2s); err != nil {
		return nil, fmt.Errorf("configuring the h2c upgrade server: %w", err)
	}
	return &UpgradeServer{h2: h2s, base: base, limits: newGuardLimits(o.MaxHeaderBytes, o.HeaderTimeout), handler: h,
		conns: map[net.Conn]struct{}{}}, nil
}

// wantsUpgrade reports whether a request's Upgrade header asks for h2c.
func wantsUpgrade(upgrade []byte) bool {
	for _, t := range bytes.Split(upgrade, []byte(",")) {
		if bytes.EqualFold(bytes.TrimSpace(t), []byte("h2c")) {
			return true
		}
	}
	return false
}

// decodeSettings decodes an HTTP2-Settings header (base64url, RFC 7540
// §3.2.1): a whole number of 6-byte settings. ok is false otherwise.
func decodeSettings(v []byte) (settings []byte, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(string(bytes.TrimRight(v, "=")))
	if err != nil || len(b)%6 != 0 {
		return nil, false
	}
	return b, true
}

// serve speaks HTTP/2 on c, whose 101 answer has been written, with req
// (the upgrade request, its body read) as stream 1, and settings the
// decoded HTTP2-Settings. It returns when the connection ends.
func (u *UpgradeServer) serve(c net.Conn, req *http.Request, settings []byte) {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		_ = c.Close()
		return
	}
	u.conns[c] = struct{}{}
	u.wg.Add(1)
	u.mu.Unlock()
	defer func() {
		u.mu.Lock()
		delete(u.conns, c)
		u.mu.Unlock()
		u.wg.Done()
	}()
	// ServeConn is deprecated in favour of http.Server.Serve, which has no
	// way to take a connection together with its first request.
	u.h2.ServeConn(newGuardedConn(c, u.limits), &http2.ServeConnOpts{BaseConfig: u.base, Handler: u.handler, UpgradeRequest: req, Settings: settings})
}

// Shutdown sends GOAWAY on every upgraded connection and waits, up to ctx,
// for their streams to end and the connections to close; then it closes
// what is left and returns ctx's error.
func (u *UpgradeServer) Shutdown(ctx context.Context) error {
	u.mu.Lock()
	u.closed = true
	u.mu.Unlock()
	_ = u.base.Shutdown(ctx) // runs the GOAWAY hook; base itself serves no connection
	done := make(chan struct{})
	go func() { u.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	u.mu.Lock()
	for c := range u.conns {
		_ = c.Close()
	}
	u.mu.Unlock()
	<-done
	return ctx.Err()
}
