package queueproxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"ebb.dev/ebb/pkg/h2c"
)

// An HTTP/1.1 request with "Upgrade: h2c" is answered 101, then served as
// stream 1 of an HTTP/2 connection: forwarded h2c to the app, counted as
// one request.
func TestH2CUpgrade(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := h2c.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto+" "+r.Method+" "+r.Host+" "+r.RequestURI+" "+r.Header.Get("X-Test"))
	}), h2c.ServerOptions{HeaderTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second})
	go func() { _ = app.Serve(ln) }()
	t.Cleanup(func() { _ = app.Close() })
	r := runProxy(t, ln.Addr().(*net.TCPAddr).Port, nil)

	c, err := net.DialTimeout("tcp", r.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	const upgrade = "GET /up?x=1 HTTP/1.1\r\nHost: example.test\r\nX-Test: kept\r\nConnection: Upgrade, HTTP2-Settings\r\n" +
		"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n\r\n"
	if _, err := io.WriteString(c, upgrade); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	head, err := readHead(br)
	if err != nil || !strings.HasPrefix(head, "HTTP/1.1 101 ") {
		t.Fatalf("answer to the upgrade: %q, %v; want a 101", head, err)
	}
	if _, err := io.WriteString(c, h2c.Preface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, br)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	status, body := readStream1(t, fr)
	if diff := cmp.Diff([]string{"200", "HTTP/2.0 GET example.test /up?x=1 kept"}, []string{status, body}); diff != "" {
		t.Errorf("stream 1 (-want +got):\n%s", diff)
	}
	waitUntil(t, func() bool { return r.q.proxy.acct.InFlight() == 0 })
	if got := r.q.proxy.acct.Report(time.Now()).RequestCount; got != 1 {
		t.Errorf("requests counted = %d, want 1 (the upgrade request is stream 1, counted once)", got)
	}
}

func readHead(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		b.WriteString(line)
		if err != nil || line == "\r\n" {
			return b.String(), err
		}
	}
}

// readStream1 reads frames until stream 1 ends; it returns its :status
// and body.
func readStream1(t *testing.T, fr *http2.Framer) (status, body string) {
	t.Helper()
	var data bytes.Buffer
	dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) {
		if f.Name == ":status" {
			status = f.Value
		}
	})
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading frames: %v (so far: status %q, body %q)", err, status, data.String())
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			if _, err := dec.Write(f.HeaderBlockFragment()); err != nil {
				t.Fatal(err)
			}
			if f.StreamID == 1 && f.StreamEnded() {
				return status, data.String()
			}
		case *http2.DataFrame:
			data.Write(f.Data())
			if f.StreamID == 1 && f.StreamEnded() {
				return status, data.String()
			}
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v", f.ErrCode)
		}
	}
}
