package proxycore

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fasthttp"
)

// dropHop drops req's hop-by-hop fields as a Trip does.
func dropHop(req *fasthttp.Request) {
	var r RequestHead
	r.Scan(&req.Header)
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

// Every trailer field a client sends after a chunked body reaches the
// upstream, announced (Trailer header) or not; the body arrives whole.
func TestChunkedRequestTrailersForwarded(t *testing.T) {
	raw := "POST /upload?x=1 HTTP/1.1\r\nHost: app.example\r\nTransfer-Encoding: chunked\r\n" +
		"Trailer: X-Checksum\r\nTE: trailers\r\nX-Head: h\r\n\r\n" +
		"5\r\nhello\r\n7\r\n, world\r\n0\r\nX-Checksum: abc123\r\nX-Late: unannounced\r\n\r\n"
	out := forwardRaw(t, raw, writeChunked)
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
		ours := forwardRaw(t, raw, writeChunked)
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
