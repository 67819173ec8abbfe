package proxycore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func decodeChunked(in string) (string, string, error) {
	br := bufio.NewReaderSize(strings.NewReader(in), 64)
	var c chunkedReader
	c.reset(br)
	out, err := io.ReadAll(&c)
	rest, _ := io.ReadAll(br)
	return string(out), string(rest), err
}

func TestChunkedReader(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     string
		wantRest string
		wantErr  error
	}{
		{name: "empty body", in: "0\r\n\r\n", want: ""},
		{name: "two chunks", in: "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", want: "hello world"},
		{name: "extension and upper-case hex", in: "A;name=value\r\n0123456789\r\n0\r\n\r\n", want: "0123456789"},
		{name: "trailers dropped, next message kept", in: "3\r\nabc\r\n0\r\nX-Sum: 1\r\nY: 2\r\n\r\nGET /", want: "abc", wantRest: "GET /"},
		{name: "bare LF tolerated", in: "3\nabc\n0\n\n", want: "abc"},
		{name: "bad size", in: "xyz\r\n", wantErr: errChunkSize},
		{name: "empty size", in: "\r\n", wantErr: errChunkSize},
		{name: "oversized", in: "fffffffffffffffff\r\n", wantErr: errChunkSize},
		{name: "missing CRLF after data", in: "3\r\nabcX\r\n0\r\n\r\n", wantErr: errChunkCRLF},
		{name: "truncated data", in: "5\r\nab", wantErr: io.ErrUnexpectedEOF},
		{name: "no last chunk", in: "3\r\nabc\r\n", wantErr: io.ErrUnexpectedEOF},
		{name: "size line too long", in: strings.Repeat("0", 100) + "1\r\n", wantErr: bufio.ErrBufferFull},
		{name: "too many trailers", in: "0\r\n" + strings.Repeat("a: b\r\n", maxTrailerFields+1) + "\r\n", wantErr: errChunkTrailers},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rest, err := decodeChunked(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff([]string{tt.want, tt.wantRest}, []string{got, rest}); diff != "" {
				t.Errorf("body, rest (-want +got):\n%s", diff)
			}
		})
	}
}

// encodeChunked frames data in chunks of the given sizes (cycled).
func encodeChunked(data []byte, sizes []byte) string {
	var b bytes.Buffer
	for i := 0; len(data) > 0; i++ {
		n := 1
		if len(sizes) > 0 {
			n = int(sizes[i%len(sizes)]) + 1
		}
		n = min(n, len(data))
		fmt.Fprintf(&b, "%x\r\n%s\r\n", n, data[:n])
		data = data[n:]
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}

// FuzzChunkedRoundTrip: whatever the data and the chunk sizes, decoding the
// framing gives the data back and consumes the whole message.
func FuzzChunkedRoundTrip(f *testing.F) {
	f.Add([]byte("hello world"), []byte{2, 0, 7})
	f.Add([]byte{}, []byte{})
	f.Add(bytes.Repeat([]byte{'\r', '\n'}, 100), []byte{255})
	f.Fuzz(func(t *testing.T, data, sizes []byte) {
		got, rest, err := decodeChunked(encodeChunked(data, sizes))
		if err != nil || got != string(data) || rest != "" {
			t.Fatalf("decode = %q, rest %q, %v; want %q", got, rest, err, data)
		}
	})
}

// FuzzChunkedReader: arbitrary input never panics, and never yields more
// bytes than it holds.
func FuzzChunkedReader(f *testing.F) {
	f.Add("5\r\nhello\r\n0\r\n\r\n")
	f.Add("3;x\nabc\n0\nT: v\n\n")
	f.Add("ffffffffffffffff\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, _, _ := decodeChunked(in)
		if len(got) > len(in) {
			t.Fatalf("decoded %d bytes from %d", len(got), len(in))
		}
	})
}
