package activator

import "bytes"

// HostRules say which Host header names which revision:
//
//	NAME.NAMESPACE
//	NAME.NAMESPACE.svc
//	NAME.NAMESPACE.svc.CLUSTER-DOMAIN
//	NAME.LOCAL-DOMAIN                  (namespace LocalNamespace)
//
// each with or without a port and a trailing dot, in any letter case.
type HostRules struct {
	// ClusterDomain is the cluster's DNS domain, "cluster.local" by default.
	ClusterDomain string
	// LocalDomain, if set, routes NAME.LocalDomain to LocalNamespace/NAME
	// and NAME.NAMESPACE.LocalDomain to NAMESPACE/NAME (the local platform:
	// "localhost"). It wins over NAME.NAMESPACE.
	LocalDomain string
	// LocalNamespace is the namespace of LocalDomain names.
	LocalNamespace string
}

// maxHostLen is the longest DNS name.
const maxHostLen = 253

// appendKey appends to dst the key ("namespace/name") of the revision that
// host names, lower-cased. It reports false, with dst unchanged, when host
// names no revision under the rules. It does not allocate when dst has
// room for twice the host.
func (hr *HostRules) appendKey(dst, host []byte) ([]byte, bool) {
	host = trimHost(host)
	if len(host) == 0 || len(host) > maxHostLen {
		return dst, false
	}
	start := len(dst)
	dst = appendLower(dst, host)
	lower := dst[start:]
	ns, name, local, ok := hr.split(lower)
	if !ok || !local && !validLabel(ns) || !validLabel(name) {
		return dst[:start], false
	}
	// Build "ns/name" after the lower-cased copy, then move it down.
	mid := len(dst)
	if local {
		dst = append(dst, hr.LocalNamespace...)
	} else {
		dst = append(dst, ns...)
	}
	dst = append(dst, '/')
	dst = append(dst, name...)
	n := copy(dst[start:], dst[mid:])
	return dst[:start+n], true
}

// split finds the namespace and name in a lower-cased host; local says
// the namespace is LocalNamespace.
func (hr *HostRules) split(h []byte) (ns, name []byte, local, ok bool) {
	dot := bytes.IndexByte(h, '.')
	if dot < 0 {
		return nil, nil, false, false
	}
	name, rest := h[:dot], h[dot+1:]
	if hr.LocalDomain != "" && string(rest) == hr.LocalDomain {
		return nil, name, true, true
	}
	dot = bytes.IndexByte(rest, '.')
	if dot < 0 {
		return rest, name, false, true
	}
	ns, tail := rest[:dot], rest[dot+1:]
	switch {
	case hr.LocalDomain != "" && string(tail) == hr.LocalDomain: // NAME.NAMESPACE.localhost
		return ns, name, false, true
	case string(tail) == "svc":
		return ns, name, false, true
	case hr.ClusterDomain != "" && len(tail) == len("svc.")+len(hr.ClusterDomain) &&
		string(tail[:4]) == "svc." && string(tail[4:]) == hr.ClusterDomain:
		return ns, name, false, true
	}
	return nil, nil, false, false
}

// trimHost drops a port and one trailing dot. A bracketed IPv6 literal is
// left alone (and later rejected: it names no revision).
func trimHost(h []byte) []byte {
	if i := bytes.LastIndexByte(h, ':'); i >= 0 && bytes.IndexByte(h, ']') < 0 && allDigits(h[i+1:]) {
		h = h[:i]
	}
	if n := len(h); n > 0 && h[n-1] == '.' {
		h = h[:n-1]
	}
	return h
}

func allDigits(b []byte) bool {
	if len(b) == 0 || len(b) > 5 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func appendLower(dst, s []byte) []byte {
	for _, c := range s {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// validLabel: an RFC 1123 label in lower case, 1 to 63 characters of
// [a-z0-9-], not starting or ending with '-' (Kubernetes names).
func validLabel(b []byte) bool {
	if len(b) == 0 || len(b) > 63 || b[0] == '-' || b[len(b)-1] == '-' {
		return false
	}
	for _, c := range b {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// validKey reports whether k is "namespace/name" of two valid labels.
func validKey(k []byte) bool {
	i := bytes.IndexByte(k, '/')
	return i > 0 && validLabel(k[:i]) && validLabel(k[i+1:])
}
