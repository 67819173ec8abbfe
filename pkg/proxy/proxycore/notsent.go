package proxycore

import (
	"crypto/subtle"
	"errors"
	"net/http"

	"github.com/valyala/fasthttp"
)

// errNotSent ends an attempt whose upstream, a hop of the proxy's own,
// answered that it did not pass the request on: nothing of it reached
// the app behind that hop (NotSentMark). The retry rule lets such a
// request be sent again, whatever its method, when its body can be sent
// again (it did not stream from the client).
var errNotSent = errors.New("the next hop did not pass the request on: the app behind it refused the connection, nothing of the request reached it")

// IsNotSent reports whether err is ErrNotSent.
func IsNotSent(err error) bool { return errors.Is(err, errNotSent) }

// NotSentMark is how an upstream that is a hop of the proxy's own says it
// did not pass the request on: a response field whose value is a proof
// only that hop can make. With Name set, the field is removed from every
// answer (a client never sees it, whoever set it), and an answer whose
// value equals Value (compared in constant time; an empty Value trusts
// nothing) ends the attempt with ErrNotSent instead of reaching the
// client. The zero NotSentMark looks at nothing.
type NotSentMark struct {
	Name  []byte
	Value []byte
}

// check removes the field from h and reports whether it carried the
// proof. It does not allocate.
func (m *NotSentMark) check(h *fasthttp.ResponseHeader) bool {
	if len(m.Name) == 0 {
		return false
	}
	// One pass over the fields the head has (PeekBytes would copy and
	// normalize the name first: about 400 instructions an answer).
	var v []byte
	found := false
	for k, val := range h.All() {
		if sameFieldName(k, m.Name) {
			v, found = val, true
			break
		}
	}
	if !found {
		return false
	}
	ok := len(m.Value) > 0 && subtle.ConstantTimeCompare(v, m.Value) == 1
	h.DelBytes(m.Name)
	return ok
}

// sameFieldName reports whether a and b are the same field name (ASCII,
// case aside).
func sameFieldName(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i]|0x20 != b[i]|0x20 {
			return false
		}
	}
	return true
}

// checkHTTP is check for an HTTP/2 stream's answer.
func (m *NotSentMark) checkHTTP(h http.Header) bool {
	if len(m.Name) == 0 {
		return false
	}
	name := string(m.Name) // canonical form, as the proxies set it
	vs, ok := h[name]
	if !ok {
		return false
	}
	delete(h, name)
	return len(m.Value) > 0 && len(vs) == 1 && subtle.ConstantTimeCompare([]byte(vs[0]), m.Value) == 1
}
