package proxycore

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResponseBody(t *testing.T) {
	tests := []struct {
		name         string
		in           string
		length       int
		want, rest   string
		wantErr      error
		wantReusable bool
	}{
		{name: "length", in: "helloGET /", length: 5, want: "hello", rest: "GET /", wantReusable: true},
		{name: "empty", in: "", length: 0, want: "", wantReusable: true},
		{name: "length, cut short", in: "hel", length: 5, want: "hel", wantErr: io.ErrUnexpectedEOF},
		{name: "chunked", in: "5\r\nhello\r\n0\r\n\r\nGET /", length: -1, want: "hello", rest: "GET /", wantReusable: true},
		{name: "chunked, malformed", in: "zz\r\n", length: -1, wantErr: errChunkSize},
		{name: "until close: never reused", in: "all of it", length: -2, want: "all of it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tt.in), 16)
			var b responseBody
			b.reset(br, tt.length)
			got, err := io.ReadAll(&b)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if _, again := b.Read(make([]byte, 1)); tt.wantErr != nil && !errors.Is(again, tt.wantErr) {
				t.Errorf("read after the error: %v, want it again", again)
			}
			rest, _ := io.ReadAll(br)
			if diff := cmp.Diff([]any{tt.want, tt.rest, tt.wantReusable}, []any{string(got), string(rest), b.reusable()}); err == nil && diff != "" {
				t.Errorf("body, rest, reusable (-want +got):\n%s", diff)
			}
		})
	}
}
