package proxycore

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestChunkLineLimit: a size line of 4,096 bytes with its CRLF is read,
// one of 4,097 is refused, as net/http's chunked reader does; on a data
// chunk and on the last one. The stream is fasthttp's own, so the test
// also fails if this fasthttp keeps its fields elsewhere.
func TestChunkLineLimit(t *testing.T) {
	if streamFields.typ == nil {
		t.Fatal("fasthttp's chunked request stream has no reader, chunkLeft and eof fields: size lines go unchecked")
	}
	line := func(size string, total int) string { // a size line of total bytes, CRLF included
		return size + ";e=" + strings.Repeat("x", total-len(size)-3-2) + "\r\n"
	}
	cases := []struct {
		name string
		body string
		want error
	}{
		{name: "4096 on a data chunk", body: line("5", 4096) + "hello\r\n0\r\n\r\n"},
		{name: "4097 on a data chunk", body: line("5", 4097) + "hello\r\n0\r\n\r\n", want: errChunkLine},
		{name: "4096 on the last chunk", body: "5\r\nhello\r\n" + line("0", 4096) + "\r\n"},
		{name: "4097 on the last chunk", body: "5\r\nhello\r\n" + line("0", 4097) + "\r\n", want: errChunkLine},
		{name: "a line cut short", body: "5;e=xx", want: io.ErrUnexpectedEOF},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var req fasthttp.Request
			req.Header.SetMethod(fasthttp.MethodPost)
			req.Header.SetContentLength(-1)
			if err := req.ContinueReadBodyStream(bufio.NewReaderSize(strings.NewReader(tc.body), MaxRequestHeadBytes), 1, false); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = req.CloseBodyStream() }()
			body := &meteredChunks{r: req.BodyStream(), m: &chunkMeter{}, lines: linesOf(req.BodyStream())}
			got, err := io.ReadAll(body)
			switch {
			case tc.want == nil && (err != nil || string(got) != "hello"):
				t.Errorf("read %q, %v; want hello", got, err)
			case tc.want == errChunkLine && !errors.Is(err, errChunkLine):
				t.Errorf("read %q, %v; want %v", got, err, errChunkLine)
			case tc.want == io.ErrUnexpectedEOF && err == nil:
				t.Errorf("read %q without an error; want the stream's own", got)
			}
		})
	}
}
