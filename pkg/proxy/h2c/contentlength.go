package h2c

import (
	"fmt"
	"net/http"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// maxContentLengthDigits bounds a content-length's digits: 18 always fit
// an int64.
const maxContentLengthDigits = 18

// ContentLengthError reports a request whose content-length field is
// malformed: a value that is not a decimal number of bytes, or values that
// differ (RFC 9110 §8.6 allows repeats of one value only). Such a request
// is malformed (RFC 9113 §8.1.1), and a proxy refuses it: the HTTP/2
// server reads a value it cannot parse as a body of length 0, so the
// request would reach the app with an empty body that ended cleanly, while
// its client may still be sending one. Nil when the field is absent or
// well formed.
func ContentLengthError(h http.Header) error {
	values := h["Content-Length"]
	first := ""
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			part = strings.TrimSpace(part)
			if !decimal(part) {
				return fmt.Errorf("malformed content-length %q: it must be a decimal number of bytes (at most %d digits); "+
					"send the body's length, or leave the field out", v, maxContentLengthDigits)
			}
			if first == "" {
				first = part
			} else if part != first {
				return fmt.Errorf("content-length fields that differ (%q): send the body's length once", values)
			}
		}
	}
	return nil
}

// decimal reports whether s is 1 to maxContentLengthDigits ASCII digits.
func decimal(s string) bool {
	if s == "" || len(s) > maxContentLengthDigits {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ContentTypeError reports a request with more than one content-type
// field. Content-Type takes one value (RFC 9110 §5.3), and the HTTP/1.1
// hops refuse repeats (fasthttp would keep the last one only); a stream is
// refused the same way, so that a request is refused or passed alike
// whatever protocol its client spoke, and an app never reads another type
// than a filter in front of Ebb that reads the first. Nil for one field
// or none (a single field's value is not parsed).
func ContentTypeError(h http.Header) error {
	if values := h["Content-Type"]; len(values) > 1 {
		return fmt.Errorf("the content-type field %d times (%q): it takes one value; send one content-type", len(values), values)
	}
	return nil
}

// AuthorityError reports a request whose :authority (Go's Request.Host) is
// not a valid host: a byte outside the ASCII letters, digits and the few
// marks RFC 3986 allows in an authority. The HTTP/1.1 server of net/http
// refuses such a Host field; its HTTP/2 server passes it on, and Go's
// HTTP/2 client then writes it to the app as punycode, a host the client
// never asked for. Refused, the stream gets 400 and the app a host only
// as its client sent it.
func AuthorityError(host string) error {
	if httpguts.ValidHostHeader(host) {
		return nil
	}
	return fmt.Errorf("the :authority %q is not a valid host (only ASCII letters, digits, %%-escapes and -._~!$&'()*+,;=:@[] may be in it); "+
		"send an international name in its ASCII form (punycode)", host)
}
