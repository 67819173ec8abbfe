//go:build !linux

package busypoll

import "net"

// Wrap leaves connections as they are: busy polling is Linux only.
func (b *Poller) Wrap(c net.Conn) net.Conn { return c }
