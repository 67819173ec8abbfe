//go:build !linux

package proxycore

import "net"

// peerClosed is not implemented off Linux: a request then finds a closed
// pooled connection by writing to it (and, if the retry rule does not let
// it be sent again, gets an error).
func peerClosed(net.Conn) bool { return false }
