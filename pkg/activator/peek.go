package activator

import (
	"net"

	"ebb.dev/ebb/pkg/proxy/proxycore"
)

// canPeek reports whether clientGone can look at c.
func canPeek(c net.Conn) bool { return proxycore.CanPeek(c) }

// clientGone reports whether the peer of c has closed the connection (or
// reset it), without reading from it or blocking (proxycore.Peek). Bytes
// waiting (the rest of a body, a pipelined request) count as gone only if
// the client closed after sending them. buf is scratch space of at least
// one byte. Anything unexpected counts as alive: the queue timeout still
// bounds the wait.
func clientGone(c net.Conn, buf []byte) bool {
	p := proxycore.Peek(c, buf)
	return p == proxycore.PeerClosed || p == proxycore.PeerSentThenClosed
}
