//go:build !linux

package activator

import "net"

// canPeek reports whether clientGone can look at c: never, off Linux.
// Requests whose client went away then wait until their queue deadline.
func canPeek(net.Conn) bool { return false }

// clientGone is not implemented off Linux.
func clientGone(net.Conn, []byte) bool { return false }
