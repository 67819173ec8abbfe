package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Server is the webhook's HTTPS server.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Listen opens addr; Serve serves on it. The certificate comes from
// getCert at each handshake.
func Listen(addr string, h http.Handler, getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--webhook %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle(InjectPath, h)
	return &Server{ln: ln, srv: &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: getCert},
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second, // the API server's webhook timeout is at most 30s
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       90 * time.Second,
	}}, nil
}

// Addr is the listening address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until Shutdown; it returns nil after a Shutdown.
func (s *Server) Serve() error {
	if err := s.srv.ServeTLS(s.ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown finishes the reviews in flight.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }
