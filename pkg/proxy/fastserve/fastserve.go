// Package fastserve is what the two proxies' fasthttp servers share around
// the proxy core: the logger fasthttp writes to, and the step that makes a
// server's Serve return whatever the order of Serve and Shutdown.
package fastserve

import (
	"fmt"
	"io"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
)

// Logger routes fasthttp's own messages to log at Debug, with a constant
// message: they are per connection (malformed requests, mostly, whose
// contents SecureErrorLogMessage keeps out), and nothing that happens per
// connection or per request is logged above Debug.
func Logger(log *zap.Logger) fasthttp.Logger { return logger{log} }

type logger struct{ log *zap.Logger }

func (l logger) Printf(format string, args ...any) {
	if ce := l.log.Check(zap.DebugLevel, "fasthttp server"); ce != nil {
		ce.Write(zap.String("detail", fmt.Sprintf(format, args...)))
	}
}

// CloseListener closes the listener a fasthttp server serves, after its
// Shutdown: fasthttp's Shutdown closes only the listeners Serve has
// registered, so a stop that comes before the Serve goroutine got that far
// would leave Serve accepting forever. Closing it again (if Shutdown did)
// makes Serve return in every order; the error of a second close is
// expected and dropped.
func CloseListener(ln io.Closer) { _ = ln.Close() }
