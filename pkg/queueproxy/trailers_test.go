package queueproxy

import (
	"io"
	"net"
	"net/http"
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
