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
