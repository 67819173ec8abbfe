package queueproxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/internal/testnet"
)

// HTTP/1.1 trailers of a chunked response reach the client, announced
// (Trailer header) or not.
func TestHTTP1TrailersForwarded(t *testing.T) {
	r := runProxy(t, netHTTPApp(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		_, _ = io.WriteString(w, "part one, ")
		w.(http.Flusher).Flush() // chunked
		_, _ = io.WriteString(w, "part two")
		w.Header().Set("X-Checksum", "abc123")
		w.Header().Set(http.TrailerPrefix+"X-Late", "unannounced")
	}), nil)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	resp, err := client.Get("http://" + r.addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{"body": string(body), "X-Checksum": resp.Trailer.Get("X-Checksum"), "X-Late": resp.Trailer.Get("X-Late")}
	want := map[string]string{"body": "part one, part two", "X-Checksum": "abc123", "X-Late": "unannounced"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("body and trailers through the queue-proxy (-want +got):\n%s", diff)
	}
}

// The trailer fields a client sends after a chunked request body reach
// the app, announced (Trailer header) or not, with the whole body.
func TestHTTP1RequestTrailersForwarded(t *testing.T) {
	r := runProxy(t, netHTTPApp(t, func(w http.ResponseWriter, r *http.Request) {
		announced := make([]string, 0, len(r.Trailer)) // before the body: the announced names
		for k := range r.Trailer {
			announced = append(announced, k)
		}
		body, err := io.ReadAll(r.Body) // the trailers are read with the body's end
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%s|%s|%s|%s", body, strings.Join(announced, ","), r.Trailer.Get("X-Checksum"), r.Trailer.Get("X-Late"))
	}), nil)

	conn, err := net.DialTimeout("tcp", r.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := testnet.RawExchange(t, conn, "POST /up HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n"+
		"5\r\nhello\r\n7\r\n, world\r\n0\r\nX-Checksum: abc123\r\nX-Late: unannounced\r\n\r\n", "app", "")
	got := []string{strconv.Itoa(resp.StatusCode()), string(resp.Body())}
	want := []string{"200", "hello, world|X-Checksum|abc123|unannounced"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status, what the app saw (body|announced names|announced|unannounced) (-want +got):\n%s", diff)
	}
}

// A trailer field that must not be one (framing) fails the request with
// 400 and the app never gets a complete request.
func TestHTTP1ForbiddenRequestTrailer(t *testing.T) {
	complete := make(chan bool, 1)
	r := runProxy(t, netHTTPApp(t, func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		complete <- err == nil
	}), nil)
	conn, err := net.DialTimeout("tcp", r.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := testnet.RawExchange(t, conn,
		"POST /up HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nContent-Length: 5\r\n\r\n", "app", "")
	if resp.StatusCode() != http.StatusBadRequest {
		t.Errorf("status %d for a Content-Length trailer; want 400", resp.StatusCode())
	}
	select {
	case ok := <-complete:
		if ok {
			t.Error("the app read a complete request whose trailer was refused")
		}
	case <-time.After(10 * time.Second):
		t.Error("the app never saw the request end")
	}
}

// netHTTPApp serves h with net/http on a port of 127.0.0.1 for the test's
// life, and returns the port.
func netHTTPApp(t *testing.T, h http.HandlerFunc) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = app.Serve(ln) }()
	t.Cleanup(func() { _ = app.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}
