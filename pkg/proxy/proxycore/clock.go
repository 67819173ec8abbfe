package proxycore

import "time"

// Now is time.Now read from the monotonic clock alone. time.Now reads the
// wall clock and the monotonic one; on virtual machines each read is a
// clock_gettime of 50 to 100 ns, and the data path reads the clock a few
// times per request. The wall-clock part drifts from the system's by the
// adjustments made since the process started, so Now is for intervals
// and deadlines (what the proxies measure per request), not for
// timestamps that leave the process.
func Now() time.Time { return clockBase.Add(time.Since(clockBase)) }
