package proxycore

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fasthttp"
)

// dropHop drops req's hop-by-hop fields as a Trip does.
func dropHop(req *fasthttp.Request) {
	var r RequestHead
	r.scan(&req.Header)
	dropHopFields(&req.Header, &r, nil)
}

// forwardRaw parses raw as the proxies' servers do, prepares it as they
// do, and returns what Outbound's writer sends upstream.
func forwardRaw(t *testing.T, raw string, write func(*bufio.Writer, *fasthttp.Request) error) []byte {
	t.Helper()
	req := parseRequest(t, raw, 0)
	dropHop(req)
	req.UseHostHeader = true
	req.URI().DisablePathNormalizing = true
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	if err := write(w, req); err != nil {
		t.Fatalf("writing the request: %v", err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// writeChunkedNoConn is writeChunked with a body from no connection.
func writeChunkedNoConn(w *bufio.Writer, req *fasthttp.Request) error {
	return writeChunked(w, req, nil)
}

// Every trailer field a client sends after a chunked body reaches the
// upstream, announced (Trailer header) or not; the body arrives whole.
func TestChunkedRequestTrailersForwarded(t *testing.T) {
	raw := "POST /upload?x=1 HTTP/1.1\r\nHost: app.example\r\nTransfer-Encoding: chunked\r\n" +
		"Trailer: X-Checksum\r\nTE: trailers\r\nX-Head: h\r\n\r\n" +
		"5\r\nhello\r\n7\r\n, world\r\n0\r\nX-Checksum: abc123\r\nX-Late: unannounced\r\n\r\n"
	out := forwardRaw(t, raw, writeChunkedNoConn)
	got, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(out)))
	if err != nil {
		t.Fatalf("the upstream cannot parse what was sent: %v\n%s", err, out)
	}
	body, err := io.ReadAll(got.Body)
	if err != nil {
		t.Fatalf("reading the forwarded body: %v\n%s", err, out)
	}
	type seen struct {
		URI, Host, Body, Head, TE string
		Chunked                   bool
		Trailer                   http.Header
	}
	want := seen{URI: "/upload?x=1", Host: "app.example", Body: "hello, world", Head: "h", TE: "trailers", Chunked: true,
		Trailer: http.Header{"X-Checksum": {"abc123"}, "X-Late": {"unannounced"}}}
	gotS := seen{URI: got.RequestURI, Host: got.Host, Body: string(body), Head: got.Header.Get("X-Head"), TE: got.Header.Get("TE"),
		Chunked: len(got.TransferEncoding) == 1 && got.TransferEncoding[0] == "chunked", Trailer: got.Trailer}
	if diff := cmp.Diff(want, gotS); diff != "" {
		t.Errorf("forwarded request (-want +got):\n%s\nsent:\n%s", diff, out)
	}
	if !bytes.Contains(out, []byte("\r\nTrailer: X-Checksum\r\n")) {
		t.Errorf("the Trailer announcement was not forwarded:\n%s", out)
	}
}

// Without trailers, writeChunked sends the bytes fasthttp's Request.Write
// sends (same head, same chunks).
func TestChunkedRequestLikeFasthttp(t *testing.T) {
	for _, raw := range []string{
		"POST /a/../b%2F?q HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nCookie: a=1; b=2\r\nX-A: 1\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"PUT /x HTTP/1.1\r\nHost: h:8080\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\nUser-Agent: ua\r\n\r\n0\r\n\r\n",
	} {
		ours := forwardRaw(t, raw, writeChunkedNoConn)
		theirs := forwardRaw(t, raw, func(w *bufio.Writer, req *fasthttp.Request) error { return req.Write(w) })
		if diff := cmp.Diff(string(theirs), string(ours)); diff != "" {
			t.Errorf("writeChunked differs from Request.Write (-fasthttp +ours):\n%s", diff)
		}
	}
}

// A request with a Content-Length drops a Trailer header: nothing can
// follow its body.
func TestTrailerHeaderDroppedWithoutChunks(t *testing.T) {
	req := parseRequest(t, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nTrailer: X-A\r\n\r\nhi", 0)
	dropHop(req)
	if v := req.Header.Peek("Trailer"); len(v) != 0 {
		t.Errorf("Trailer = %q on a request with a Content-Length; want it dropped", v)
	}
}

// endedConn is a client connection whose reads did (or did not) end.
type endedConn bool

func (e endedConn) ReadEnded() bool { return bool(e) }

// A chunked body is whole only at its last chunk: a body stream that ends
// (fasthttp's plain io.EOF) after the client's connection ended is cut,
// and writeChunked writes nothing after the chunks it had (no last chunk,
// which would make the upstream take the short body as whole). With the
// connection still open the same io.EOF is the body's end.
func TestChunkedBodyCutAtBoundary(t *testing.T) {
	raw := "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
	for _, ended := range []bool{false, true} {
		req := parseRequest(t, raw, 0)
		dropHop(req)
		req.UseHostHeader = true
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		err := writeChunked(w, req, endedConn(ended))
		_ = w.Flush()
		switch {
		case ended && !errors.Is(err, errBodyCut):
			t.Errorf("client gone: err = %v, want ErrBodyCut", err)
		case ended && !errors.Is(err, io.ErrUnexpectedEOF):
			t.Errorf("ErrBodyCut does not wrap io.ErrUnexpectedEOF")
		case ended && bytes.Contains(out.Bytes(), []byte("\r\n0\r\n")):
			t.Errorf("client gone: a last chunk was written:\n%s", out.Bytes())
		case !ended && (err != nil || !bytes.HasSuffix(out.Bytes(), []byte("5\r\nhello\r\n0\r\n\r\n"))):
			t.Errorf("client there: err = %v, sent:\n%s", err, out.Bytes())
		}
	}
}
