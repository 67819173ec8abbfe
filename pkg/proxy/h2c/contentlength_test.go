package h2c

import (
	"net/http"
	"testing"
)

func TestContentLengthError(t *testing.T) {
	for _, tc := range []struct {
		values []string
		ok     bool
	}{
		{values: nil, ok: true},
		{values: []string{"0"}, ok: true},
		{values: []string{"1234"}, ok: true},
		{values: []string{"5", "5"}, ok: true},
		{values: []string{"5, 5"}, ok: true},
		{values: []string{"999999999999999999"}, ok: true},
		{values: []string{"1\xab"}},
		{values: []string{""}},
		{values: []string{"-1"}},
		{values: []string{"+5"}},
		{values: []string{"0x10"}},
		{values: []string{"5", "6"}},
		{values: []string{"5, 6"}},
		{values: []string{"5,"}},
		{values: []string{"9999999999999999999"}},
	} {
		h := http.Header{}
		for _, v := range tc.values {
			h.Add("Content-Length", v)
		}
		err := ContentLengthError(h)
		if (err == nil) != tc.ok {
			t.Errorf("ContentLengthError(%q) = %v; want ok %v", tc.values, err, tc.ok)
		}
	}
}

func TestContentTypeError(t *testing.T) {
	for _, tc := range []struct {
		values []string
		ok     bool
	}{
		{values: nil, ok: true},
		{values: []string{"text/plain"}, ok: true},
		{values: []string{"text/a, text/b"}, ok: true}, // one field: passed as it is
		{values: []string{"text/a", "text/b"}},
		{values: []string{"text/plain", "text/plain"}},
	} {
		h := http.Header{}
		for _, v := range tc.values {
			h.Add("Content-Type", v)
		}
		if err := ContentTypeError(h); (err == nil) != tc.ok {
			t.Errorf("ContentTypeError(%q) = %v; want ok %v", tc.values, err, tc.ok)
		}
	}
}

func TestAuthorityError(t *testing.T) {
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{host: "hello.default.example.com", ok: true},
		{host: "127.0.0.1:8012", ok: true},
		{host: "[::1]:8080", ok: true},
		{host: "xn--bcher-kva.example", ok: true},
		{host: "ledg9\xab2o5st"},      // the fuzzer's: the app behind the queue-proxy got xn--ledg92o5st-9k10d
		{host: "b\u00fccher.example"}, // UTF-8: send it as punycode
		{host: "a b"},
	} {
		if err := AuthorityError(tc.host); (err == nil) != tc.ok {
			t.Errorf("AuthorityError(%q) = %v; want ok %v", tc.host, err, tc.ok)
		}
	}
}
