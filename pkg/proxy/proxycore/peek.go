package proxycore

import "net"

// Peer is what a peek at a connection found (Peek).
type Peer uint8

// What a peek finds.
const (
	peerAlive          Peer = iota // nothing to read, or no way to tell
	PeerClosed                     // end of file, reset or timed out
	peerSent                       // bytes waiting; the peer has not closed
	PeerSentThenClosed             // bytes waiting, then the peer closed
)

// peeker looks at a pooled connection before it carries a request, as
// Go's Transport does with the read it keeps on every idle connection:
// one that its peer closed, reset, or sent bytes on while it was idle
// must not carry a request. Bytes on an idle connection are the
// upstream's error (a body it sent after a HEAD or 204 answer, an
// answer framed ambiguously): read as the next request's answer, they
// would reach another client. A peeker is reused across requests (it
// lives in an Outbound), so with a connection that keeps its RawConn
// (busypoll's) a peek allocates nothing: one non-blocking system call.
type peeker struct {
	buf  [1]byte
	got  Peer
	step func(fd uintptr) // bound once: a method value allocates
}

// peek says what c's peer has done (Peek).
func (k *peeker) peek(c net.Conn) Peer {
	if k.step == nil {
		k.step = k.look
	}
	return k.run(c)
}
