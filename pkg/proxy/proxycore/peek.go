package proxycore

import "net"

// Peer is what a peek at a connection found (Peek).
type Peer uint8

// What a peek finds.
const (
	PeerAlive          Peer = iota // nothing to read, or no way to tell
	PeerClosed                     // end of file, reset or timed out
	PeerSent                       // bytes waiting; the peer has not closed
	PeerSentThenClosed             // bytes waiting, then the peer closed
)

// peerClosed reports whether an idle pooled connection must not carry a
// request: its peer closed or reset it, or sent bytes on it while idle
// (the peer's error). It costs a syscall and two small allocations, so it
// runs only for requests the retry rule would not let us send again.
func peerClosed(c net.Conn) bool {
	var b [1]byte
	return Peek(c, b[:]) != PeerAlive
}
