package queueproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// HTTP/1.1 trailers of a chunked response reach the client, announced
// (Trailer header) or not.
func TestHTTP1TrailersForwarded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		_, _ = io.WriteString(w, "part one, ")
		w.(http.Flusher).Flush() // chunked
		_, _ = io.WriteString(w, "part two")
		w.Header().Set("X-Checksum", "abc123")
		w.Header().Set(http.TrailerPrefix+"X-Late", "unannounced")
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = app.Serve(ln) }()
	t.Cleanup(func() { _ = app.Close() })
	r := runProxy(t, ln.Addr().(*net.TCPAddr).Port, nil)

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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = app.Serve(ln) }()
	t.Cleanup(func() { _ = app.Close() })
	r := runProxy(t, ln.Addr().(*net.TCPAddr).Port, nil)

	conn, err := net.DialTimeout("tcp", r.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err = io.WriteString(conn, "POST /up HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n"+
		"5\r\nhello\r\n7\r\n, world\r\n0\r\nX-Checksum: abc123\r\nX-Late: unannounced\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{resp.Status, string(body)}
	want := []string{"200 OK", "hello, world|X-Checksum|abc123|unannounced"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status, what the app saw (body|announced names|announced|unannounced) (-want +got):\n%s", diff)
	}
}

// A trailer field that must not be one (framing) fails the request with
// 400 and the app never gets a complete request.
func TestHTTP1ForbiddenRequestTrailer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	complete := make(chan bool, 1)
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		complete <- err == nil
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = app.Serve(ln) }()
	t.Cleanup(func() { _ = app.Close() })
	r := runProxy(t, ln.Addr().(*net.TCPAddr).Port, nil)
	conn, err := net.DialTimeout("tcp", r.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err = io.WriteString(conn, "POST /up HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nContent-Length: 5\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d for a Content-Length trailer; want 400", resp.StatusCode)
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
