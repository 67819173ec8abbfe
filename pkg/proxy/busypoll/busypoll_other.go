//go:build !linux

package busypoll

import "net"

// wrap leaves connections as they are: busy polling is Linux only.
func (b *Poller) wrap(c net.Conn) net.Conn { return c }
