package activator

import (
	"bytes"
	"strings"
)

// routeMiss says why a request found no revision.
type routeMiss uint8

const (
	missNone      routeMiss = iota
	missHost                // the Host header names no revision under the rules
	missNamespace           // the revision's namespace is not served here (Options.Namespaces)
	missRevision            // no such revision
)

// namespaceSet is the set of namespaces an activator serves; empty serves
// all. Immutable after New.
type namespaceSet []string

// allows reports whether the revision key ("namespace/name") is in a
// served namespace. It does not allocate.
func (ns namespaceSet) allows(key []byte) bool {
	if len(ns) == 0 {
		return true
	}
	i := bytes.IndexByte(key, '/')
	if i < 0 {
		return false
	}
	for _, n := range ns {
		if string(key[:i]) == n {
			return true
		}
	}
	return false
}

func (ns namespaceSet) String() string {
	if len(ns) == 0 {
		return "all namespaces"
	}
	return strings.Join(ns, ", ")
}

func (a *Activator) revisionHeaderHint() string {
	if !a.opts.RevisionHeader {
		return ""
	}
	return ", or the " + revisionHeader + " header (namespace/name)"
}
