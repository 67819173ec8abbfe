package queueproxy

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"ebb.dev/ebb/pkg/config"
)

// h2cOnlyApp serves HTTP/2 cleartext with prior knowledge and nothing
// else (an HTTP/1.1 request is not understood), like a gRPC server: it
// echoes the protocol and the body, and sets a trailer. It returns the
// port.
func h2cOnlyApp(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	s := &http.Server{Protocols: &p, ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/ready" {
				return
			}
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.Header().Set("Trailer", "X-Checksum")
			w.Header().Set("X-App-Proto", r.Proto)
			w.Header().Set("X-App-Hop", r.Header.Get("X-Hop"))
			_, _ = io.WriteString(w, r.Method+" "+string(body))
			w.Header().Set("X-Checksum", "len="+strings.Repeat("x", len(body)%7))
		})}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// http1Client speaks HTTP/1.1 only.
func http1Client(t *testing.T) *http.Client {
	var p http.Protocols
	p.SetHTTP1(true)
	tr := &http.Transport{Protocols: &p}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

func TestUpstreamH2CFromHTTP1Client(t *testing.T) {
	r := runProxy(t, h2cOnlyApp(t), func(c *Config) {
		c.UpstreamProtocol = config.UpstreamH2C
		c.ContainerConcurrency = 2
		c.ProbePath = "/ready" // probed over h2c: an HTTP/1.1 probe would never pass
	})
	body := strings.Repeat("hello ", 1000) // 6000 bytes
	req, err := http.NewRequest(http.MethodPost, "http://"+r.addr+"/echo", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Connection", "keep-alive, X-Hop")
	req.Header.Set("X-Hop", "must not reach the app")
	resp, err := http1Client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ProtoMajor != 1 {
		t.Errorf("client saw %s, want HTTP/1.1", resp.Proto)
	}
	type answer struct {
		Status                          int
		AppProto, AppHop, Body, Trailer string
	}
	want := answer{http.StatusOK, "HTTP/2.0", "", "POST " + body, "len=" + strings.Repeat("x", len(body)%7)}
	gotA := answer{resp.StatusCode, resp.Header.Get("X-App-Proto"), resp.Header.Get("X-App-Hop"), string(got), resp.Trailer.Get("X-Checksum")}
	if diff := cmp.Diff(want, gotA); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	waitUntil(t, func() bool { return r.q.proxy.acct.InFlight() == 0 })
}

// TestUpstreamHTTP1ToH2COnlyApp is the control: by default an HTTP/1.1
// request goes to the app as HTTP/1.1, which an h2c-only app refuses.
func TestUpstreamHTTP1ToH2COnlyApp(t *testing.T) {
	r := runProxy(t, h2cOnlyApp(t), nil)
	resp, err := http1Client(t).Post("http://"+r.addr+"/echo", "text/plain", strings.NewReader("hi"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode == http.StatusOK {
		t.Errorf("status %d: an HTTP/1.1 request reached an h2c-only app", resp.StatusCode)
	}
}

// TestUpstreamH2CRefusesUpgrade: an upgrade (websocket) cannot cross to
// HTTP/2; the client gets a 502, and nothing stays in flight.
func TestUpstreamH2CRefusesUpgrade(t *testing.T) {
	r := runProxy(t, h2cOnlyApp(t), func(c *Config) { c.UpstreamProtocol = config.UpstreamH2C })
	req, err := http.NewRequest(http.MethodGet, "http://"+r.addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	resp, err := http1Client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("status %d, want 502", resp.StatusCode)
	}
	waitUntil(t, func() bool { return r.q.proxy.acct.InFlight() == 0 })
}
