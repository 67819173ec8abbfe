package proxycore

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/net/http2"

	"ebb.dev/ebb/internal/testnet"
	"ebb.dev/ebb/pkg/proxy/h2c"
)

// progressTimeout is the write timeout of these tests: long beside the
// readers' pauses (20 ms), short beside a whole download.
const progressTimeout = time.Second

// streamBody is a body stream of n zero bytes that reports how it ended.
type streamBody struct {
	left  int
	ended chan error
}

func (b *streamBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), b.left)
	clear(p[:n])
	b.left -= n
	return n, nil
}

func (b *streamBody) CloseWithError(err error) error { b.ended <- err; return nil }

// smallReceiveBuffer dials with a 16 KiB receive buffer, so that a
// client that stops reading blocks the server's writes soon.
var smallReceiveBuffer = net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10) })
	return errors.Join(err, serr)
}}

// readSlowly reads r to its end in 64 KiB steps, 20 ms apart.
func readSlowly(r io.Reader) (int64, error) {
	var total int64
	for {
		n, err := io.CopyN(io.Discard, r, 64<<10)
		total += n
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return total, err
		}
		time.Sleep(20 * time.Millisecond) // pacing the client, not an assertion
	}
}

// A fasthttp server behind WriteProgressListener: a client that stops
// reading is cut (the body stream ends with an error); one that reads an
// 8 MiB answer slowly, for longer than the timeout in all, is not.
func TestWriteProgressHTTP1(t *testing.T) {
	t.Parallel()
	const size = 8 << 20
	ended := make(chan error, 2)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.Response.SetBodyStream(&streamBody{left: size, ended: ended}, size)
	}}
	go func() { _ = s.Serve(WriteProgressListener(ln, progressTimeout)) }()
	t.Cleanup(func() { _ = s.Shutdown() })

	stalled, err := smallReceiveBuffer.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	if _, err := io.WriteString(stalled, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the answer to a client that reads nothing was written whole")
		}
	case <-time.After(progressTimeout + 10*time.Second):
		t.Fatal("the answer to a client that reads nothing still going 10s after the write timeout")
	}

	c := slowGet(t, ln.Addr().String(), "")
	start := time.Now()
	n, err := readSlowly(io.LimitReader(c, size+100)) // the head, then the body
	took := time.Since(start)
	if err != nil || n < size {
		t.Fatalf("slow reader got %d bytes, %v (after %v); want the whole answer", n, err, took)
	}
	if err := <-ended; err != nil {
		t.Errorf("the answer to the slow reader ended with %v", err)
	}
	t.Logf("a slow reader took %v for %d bytes, write timeout %v", took, n, progressTimeout)
}

// ProgressWriter on an HTTP/2 server: a stream granted no flow-control
// window is reset; a stream read slowly, for longer than the timeout in
// all, is not.
func TestProgressWriterHTTP2(t *testing.T) {
	t.Parallel()
	const size = 4 << 20
	ended := make(chan error, 2)
	addr, p := serveH2Download(t, progressTimeout, size, true, ended)

	stalled := testnet.DialH2(t, addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	stalled.Request(t, 1, "GET", "x", "/", true)
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the answer to a stream granted no window was written whole")
		}
	case <-time.After(progressTimeout + 10*time.Second):
		t.Fatal("the answer to a stream granted no window still going 10s after the write timeout")
	}
	if _, ok := stalled.Wait(10*time.Second, func(s map[uint32]testnet.H2Stream, ended bool) bool { return s[1].Reset || ended }); !ok {
		t.Error("the stalled stream was not reset")
	}

	tr := &http.Transport{Protocols: p, HTTP2: &http.HTTP2Config{MaxReceiveBufferPerStream: 64 << 10}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 60 * time.Second}).Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	n, err := readSlowly(resp.Body)
	took := time.Since(start)
	if err != nil || n != size {
		t.Fatalf("slow reader got %d bytes, %v (after %v); want %d", n, err, took, size)
	}
	if err := <-ended; err != nil {
		t.Errorf("the answer to the slow reader ended with %v", err)
	}
	t.Logf("a slow HTTP/2 reader took %v for %d bytes, write timeout %v", took, n, progressTimeout)
}

// ProgressWriter on an HTTP/2 server: a client that grants window more
// slowly than a write of 32 KiB per timeout, but steadily (1 KiB every
// 20 ms against a 600 ms timeout: a 32 KiB write takes 640 ms, a 16 KiB
// piece 320 ms), reads its whole answer. Before, the deadline covered each
// write whole and the stream was reset after the first window ran out.
func TestProgressWriterHTTP2SlowWindow(t *testing.T) {
	t.Parallel()
	const size, timeout = 192 << 10, 600 * time.Millisecond
	ended := make(chan error, 1)
	addr, p := serveH2Download(t, timeout, size, false, ended)

	tr := &http.Transport{Protocols: p, HTTP2: &http.HTTP2Config{MaxReceiveBufferPerStream: 64 << 10}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 60 * time.Second}).Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	var n int64
	for {
		k, err := io.CopyN(io.Discard, resp.Body, 1<<10)
		n += k
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("the steady slow reader got %d bytes, then %v (after %v); want %d", n, err, time.Since(start), size)
			}
			break
		}
		time.Sleep(20 * time.Millisecond) // pacing the client, not an assertion
	}
	if n != size {
		t.Fatalf("the steady slow reader got %d bytes, want %d", n, size)
	}
	if err := <-ended; err != nil {
		t.Errorf("the answer to the steady slow reader ended with %v", err)
	}
	t.Logf("a steady slow HTTP/2 reader took %v for %d bytes, write timeout %v", time.Since(start), n, timeout)
}

// ProgressWriter on h2c.Server: a client whose windows have room (Go's
// client: 4 MiB a stream, 1 GiB the connection) gets each 32 KiB write
// whole, not in pieces: the pieces are for a client that grants window
// slowly.
func TestProgressWriterHTTP2WholeWhenOpen(t *testing.T) {
	t.Parallel()
	const writes = 32
	counted := make(chan *pieceCounter, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := h2c.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &pieceCounter{ResponseWriter: w}
		pw := ProgressWriter(c, r, progressTimeout)
		for range writes {
			if _, err := pw.Write(make([]byte, progressWhole)); err != nil {
				break
			}
		}
		counted <- c
	}), h2c.ServerOptions{HeaderTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second})
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: p}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != writes*progressWhole {
		t.Fatalf("got %d bytes, %v; want %d", n, err, writes*progressWhole)
	}
	if c := <-counted; c.whole != writes || c.pieces != 0 {
		t.Errorf("%d writes whole and %d pieces, want %d whole", c.whole, c.pieces, writes)
	}
}

// pieceCounter counts the writes that reach the server's writer whole
// (progressWhole bytes) and in pieces.
type pieceCounter struct {
	http.ResponseWriter
	whole, pieces int
}

func (c *pieceCounter) Write(p []byte) (int, error) {
	if len(p) == progressWhole {
		c.whole++
	} else {
		c.pieces++
	}
	return c.ResponseWriter.Write(p)
}

func (c *pieceCounter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// BenchmarkProgressWriterHTTP2 downloads 8 MiB over HTTP/2, written in
// ReverseProxy's 32 KiB writes, by a client that reads as fast as it can:
// through ProgressWriter ("progress") and straight to the server's writer
// ("bare", the baseline of the same run). The ratio of the two is the
// cost of bounding the progress. cpu-ns/op is the process's CPU time (the
// client's and the server's), which other work on a shared machine moves
// less than the wall time.
func BenchmarkProgressWriterHTTP2(b *testing.B) {
	for _, c := range []struct {
		name    string
		timeout time.Duration
	}{{"bare", 0}, {"progress", 30 * time.Second}} {
		b.Run(c.name, func(b *testing.B) { benchH2Download(b, c.timeout) })
	}
}

// BenchmarkProgressWriterHTTP2Paired is BenchmarkProgressWriterHTTP2 in
// pairs: each op downloads 8 MiB from a bare server and from one behind
// ProgressWriter, one after the other (the order alternating), and
// speed-ratio is the median over the pairs of the bare download's time
// over the other's (1: as fast as the bare writer). A machine whose load
// moves from one second to the next moves both halves of a pair alike,
// which separate sub-benchmarks, seconds apart, do not.
func BenchmarkProgressWriterHTTP2Paired(b *testing.B) {
	const size = 8 << 20
	bareAddr, p := serveH2Download(b, 0, size, false, nil)
	progressAddr, _ := serveH2Download(b, 30*time.Second, size, false, nil)
	tr := &http.Transport{Protocols: p}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	download := func(addr string) time.Duration {
		start := time.Now()
		resp, err := c.Get("http://" + addr + "/")
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		if n, err := io.Copy(io.Discard, resp.Body); err != nil || n != size {
			b.Fatalf("%d bytes, %v", n, err)
		}
		return time.Since(start)
	}
	b.SetBytes(2 * size)
	var ratios []float64
	for i := 0; b.Loop(); i++ {
		var bare, progress time.Duration
		if i%2 == 0 {
			bare, progress = download(bareAddr), download(progressAddr)
		} else {
			progress, bare = download(progressAddr), download(bareAddr)
		}
		ratios = append(ratios, float64(bare)/float64(progress))
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "speed-ratio")
}

func benchH2Download(b *testing.B, timeout time.Duration) {
	const size = 8 << 20
	addr, p := serveH2Download(b, timeout, size, false, nil)
	tr := &http.Transport{Protocols: p}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	b.SetBytes(size)
	cpu0 := processCPU()
	for b.Loop() {
		resp, err := c.Get("http://" + addr + "/")
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, resp.Body); err != nil || n != size {
			b.Fatalf("%d bytes, %v", n, err)
		}
		resp.Body.Close()
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// smallSendBuffer hands out connections with a 16 KiB send buffer, so a
// write of 64 KiB waits for the client to take most of it.
type smallSendBuffer struct{ net.Listener }

func (l smallSendBuffer) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		_ = c.(*net.TCPConn).SetWriteBuffer(16 << 10)
	}
	return c, err
}

// WriteProgressListener: a client that takes a 64 KiB answer (one write)
// steadily but more slowly than 64 KiB per timeout (1 KiB every 20 ms,
// against 300 ms) gets all of it; before, the write's deadline passed
// midway and the connection was cut while the client kept reading.
func TestWriteProgressHTTP1SlowSteady(t *testing.T) {
	t.Parallel()
	const size = 64 << 10
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, size)
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.Response.SetBodyRaw(body) }}
	// A write timeout 50 times the pace: a reader starved under -race on a
	// busy machine still reads in time.
	go func() { _ = s.Serve(WriteProgressListener(smallSendBuffer{ln}, time.Second)) }()
	t.Cleanup(func() { _ = s.Shutdown() })

	c := slowGet(t, ln.Addr().String(), "Connection: close\r\n")
	start := time.Now()
	resp, err := http.ReadResponse(bufio.NewReaderSize(paced{c}, 1<<10), nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || n != size {
		t.Fatalf("the steady slow reader got %d bytes of body, then %v (after %v); want %d", n, err, time.Since(start), size)
	}
	t.Logf("a steady slow reader took %v for %d bytes, write timeout 1s", time.Since(start), n)
}

// paced reads at most 1 KiB a read, 20 ms apart.
type paced struct{ r io.Reader }

func (p paced) Read(b []byte) (int, error) {
	time.Sleep(20 * time.Millisecond) // pacing the client, not an assertion
	return p.r.Read(b[:min(len(b), 1<<10)])
}

// serveH2Download serves, over prior-knowledge HTTP/2 on a loopback port
// (h2c.Server, as the proxies do), size bytes in ReverseProxy's 32 KiB writes through ProgressWriter with
// the given write timeout (0: straight to the server's writer), each
// write flushed when flush is set, and sends how the answer ended to
// ended when it is not nil. It returns the server's address and the
// protocols a client needs.
func serveH2Download(tb testing.TB, timeout time.Duration, size int, flush bool, ended chan<- error) (string, *http.Protocols) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	end := func(err error) {
		if ended != nil {
			ended <- err
		}
	}
	s := h2c.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if timeout > 0 {
			w = ProgressWriter(w, r, timeout)
		}
		chunk := make([]byte, 32<<10)
		for range size / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				end(err)
				return
			}
			if !flush {
				continue
			}
			if err := http.NewResponseController(w).Flush(); err != nil {
				end(err)
				return
			}
		}
		end(nil)
	}), h2c.ServerOptions{HeaderTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second})
	go func() { _ = s.Serve(ln) }()
	tb.Cleanup(func() { _ = s.Close() })
	return ln.Addr().String(), p
}

// slowGet dials addr with a small receive buffer and sends one GET with
// the given extra header lines; the connection is closed when the test ends.
func slowGet(t *testing.T, addr, extra string) net.Conn {
	t.Helper()
	c, err := smallReceiveBuffer.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n"+extra+"\r\n"); err != nil {
		t.Fatal(err)
	}
	return c
}
