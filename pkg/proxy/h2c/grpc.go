package h2c

import (
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// GRPCTimeoutHeader carries a gRPC call's deadline, relative to the
// request's arrival (gRPC over HTTP/2: "grpc-timeout").
const GRPCTimeoutHeader = "Grpc-Timeout"

// maxGRPCTimeoutDigits: the protocol allows at most 8 digits.
const maxGRPCTimeoutDigits = 8

// Timeout parses a grpc-timeout value (1 to 8 digits and a unit: H, M, S,
// m, u, n). ok is false for an absent or malformed value, which a proxy
// ignores (the app answers it).
func Timeout(v string) (d time.Duration, ok bool) {
	if len(v) < 2 || len(v) > maxGRPCTimeoutDigits+1 {
		return 0, false
	}
	n, err := strconv.ParseInt(v[:len(v)-1], 10, 64)
	if err != nil || n < 0 || strings.ContainsAny(v[:1], "+-") {
		return 0, false
	}
	var unit time.Duration
	switch v[len(v)-1] {
	case 'H':
		unit = time.Hour
	case 'M':
		unit = time.Minute
	case 'S':
		unit = time.Second
	case 'm':
		unit = time.Millisecond
	case 'u':
		unit = time.Microsecond
	case 'n':
		unit = time.Nanosecond
	default:
		return 0, false
	}
	if time.Duration(n) > math.MaxInt64/unit {
		return math.MaxInt64, true // 99999999H overflows; it means "no deadline" anyway
	}
	return time.Duration(n) * unit, true
}

// isGRPC reports whether a request is a gRPC call (its content type is
// application/grpc, with or without a +format suffix).
func isGRPC(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return strings.HasPrefix(ct, "application/grpc") &&
		(len(ct) == len("application/grpc") || ct[len("application/grpc")] == '+' || ct[len("application/grpc")] == ';')
}

// gRPC status codes a proxy answers with (google.golang.org/grpc/codes).
const (
	codeDeadlineExceeded = 4
	codeResourceExhaust  = 8
	codeUnavailable      = 14
	codeInternal         = 13
	codeUnimplemented    = 12
)

// grpcCode is the gRPC status for an HTTP status a proxy would answer,
// following gRPC's own mapping of HTTP statuses (doc/http-grpc-status-mapping.md).
func grpcCode(status int) int {
	switch status {
	case http.StatusGatewayTimeout, http.StatusRequestTimeout:
		return codeDeadlineExceeded
	case http.StatusServiceUnavailable, http.StatusBadGateway:
		return codeUnavailable
	case http.StatusTooManyRequests:
		return codeResourceExhaust
	case http.StatusNotFound:
		return codeUnimplemented
	}
	return codeInternal
}

// WriteError answers a stream the proxy did not forward (or whose
// upstream failed before answering). A gRPC client gets a trailers-only
// response (HTTP 200, grpc-status and grpc-message in the head), which is
// how gRPC reports an error without a body; anyone else gets status and
// msg as plain text.
func WriteError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h := w.Header()
	if isGRPC(r) {
		h.Set("Content-Type", "application/grpc")
		h.Set("Grpc-Status", strconv.Itoa(grpcCode(status)))
		h.Set("Grpc-Message", grpcMessage(msg))
		w.WriteHeader(http.StatusOK)
		return
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg))
}

// grpcMessage percent-encodes msg as grpc-message requires (every byte
// outside printable ASCII, and '%').
func grpcMessage(msg string) string {
	msg = strings.TrimRight(msg, "\n")
	for i := 0; i < len(msg); i++ {
		if c := msg[i]; c < ' ' || c > '~' || c == '%' {
			return url.PathEscape(msg)
		}
	}
	return msg
}
