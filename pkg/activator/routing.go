package activator

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/valyala/fasthttp"
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
	return ", or the " + RevisionHeader + " header (namespace/name)"
}

// targetAgrees answers 400 and reports false for a request target the
// activator would route and forward by two different hosts. It routes by
// the Host header; an absolute-form target (GET http://a.b/ HTTP/1.1, RFC
// 9112 3.2.2) carries its own authority, which a server must prefer and
// fasthttp forwards: so such a target is accepted only when its host
// (and port) is the Host header's, ignoring case. The
// asterisk and authority forms (OPTIONS *, CONNECT) name no resource of a
// revision and are refused too.
func (a *Activator) targetAgrees(ctx *fasthttp.RequestCtx) bool {
	uri := ctx.Request.Header.RequestURI()
	if len(uri) > 0 && uri[0] == '/' {
		return true // origin-form: the common case costs one comparison
	}
	target := ctx.Request.URI().Host()
	if hasHTTPScheme(uri) && bytes.EqualFold(target, ctx.Request.Header.Host()) {
		return true
	}
	discardBody(ctx)
	ctx.Response.SetStatusCode(fasthttp.StatusBadRequest)
	ctx.Response.Header.SetContentType("text/plain; charset=utf-8")
	ctx.Response.SetBodyRaw(fmt.Appendf(nil,
		"activator: request target %q: use a path (/...), or an absolute URL whose host is the Host header's (%q)\n",
		uri, ctx.Request.Header.Host()))
	a.metrics.results[resultBadRequest].Inc()
	return false
}

// hasHTTPScheme reports whether an absolute-form target starts with
// http:// or https:// (any case).
func hasHTTPScheme(uri []byte) bool {
	for _, scheme := range []string{"http://", "https://"} {
		if len(uri) >= len(scheme) && bytes.EqualFold(uri[:len(scheme)], []byte(scheme)) {
			return true
		}
	}
	return false
}
