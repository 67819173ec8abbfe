package h2c

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"ebb.dev/ebb/internal/testnet"
)

// guardApp is the handler behind the guarded servers of these tests:
// /slow answers once release is closed, /body reads the body and sends
// what the read ended with to bodyErr, anything else answers at once.
type guardApp struct {
	release chan struct{}
	bodyErr chan error
	served  atomic.Int64 // requests that reached the handler
}

func newGuardApp() *guardApp {
	return &guardApp{release: make(chan struct{}), bodyErr: make(chan error, 1)}
}

func (a *guardApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.served.Add(1)
	switch r.URL.Path {
	case "/slow":
		<-a.release
	case "/body":
		_, err := io.Copy(io.Discard, r.Body)
		a.bodyErr <- err
	}
	_, _ = io.WriteString(w, "ok "+r.URL.Path)
}

var guardOptions = ServerOptions{HeaderTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second,
	MaxHeaderBytes: 8 << 10, WriteTimeout: 10 * time.Second}

// serveGuarded starts a Server for app on 127.0.0.1 and returns its address.
func serveGuarded(t *testing.T, app http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(app, guardOptions)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	return ln.Addr().String()
}

// kib returns fields ("name", "value" pairs) of n KiB in all.
func kib(n int) []string {
	v := strings.Repeat("v", 1<<10-40)
	var f []string
	for i := range n {
		f = append(f, fmt.Sprintf("x-field-%04d", i), v)
	}
	return f
}

const guardWait = 10 * time.Second

func ended(id uint32) func(map[uint32]testnet.H2Stream, bool) bool {
	return func(s map[uint32]testnet.H2Stream, end bool) bool { return s[id].Ended || s[id].Reset || end }
}

// rawH2 is a client connection to addr for frames no client library
// writes: the preface and empty settings sent, what the server sends
// read and dropped; it closes when the test ends.
func rawH2(t *testing.T, addr string) *http2.Framer {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	go func() { _, _ = io.Copy(io.Discard, conn) }()
	fr := http2.NewFramer(conn, conn)
	_, _ = io.WriteString(conn, http2.ClientPreface)
	_ = fr.WriteSettings()
	return fr
}

// hpackBlock encodes fields (name, value) as one header block.
func hpackBlock(fields [][2]string) []byte {
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range fields {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	return hb.Bytes()
}

// TestGuardBlockInPieces: a header block over the limit that comes in
// many small frames is answered 431 and the connection goes on. Without
// the guard, the server ends the connection (GOAWAY PROTOCOL_ERROR) at
// the first CONTINUATION frame after the list went over.
func TestGuardBlockInPieces(t *testing.T) {
	app := newGuardApp()
	for _, size := range []int{1 << 10, 4 << 10, 16 << 10} {
		t.Run(fmt.Sprintf("frames of %d", size), func(t *testing.T) {
			c := testnet.DialH2(t, serveGuarded(t, app))
			c.FrameSize = size
			c.Request(t, 1, "GET", "h", "/big", true, kib(12)...)
			got, ok := c.Wait(guardWait, ended(1))
			if !ok || got[1].Status != "431" {
				t.Fatalf("12 KiB of fields in frames of %d bytes: %+v, want 431", size, got[1])
			}
			c.Request(t, 3, "GET", "h", "/next", true)
			if got, ok := c.Wait(guardWait, ended(3)); !ok || got[3].Status != "200" {
				t.Fatalf("the next stream on the connection: %+v, want 200", got[3])
			}
			if _, _, sent := c.GoAway(); sent {
				t.Error("the server sent GOAWAY")
			}
		})
	}
	if n := app.served.Load(); n != 3 {
		t.Errorf("the handler served %d requests, want 3 (the next ones)", n)
	}
}

// TestGuardHugeBlock: a header block far over the limit (500 KiB, in
// one frame or in frames of 16 KiB) is answered 431; the connection
// ends gracefully: the server's GOAWAY (NO_ERROR) names that stream as
// the last it took, the stream in flight before it is answered in full,
// and a stream opened after it is not processed.
func TestGuardHugeBlock(t *testing.T) {
	for _, size := range []int{16 << 10, 600 << 10} {
		t.Run(fmt.Sprintf("frames of %d", size), func(t *testing.T) {
			app := newGuardApp()
			c := testnet.DialH2(t, serveGuarded(t, app))
			c.FrameSize = size
			c.Request(t, 1, "GET", "h", "/slow", true)
			c.Request(t, 3, "GET", "h", "/huge", true, kib(500)...)
			got, ok := c.Wait(guardWait, ended(3))
			if !ok || got[3].Status != "431" {
				t.Fatalf("500 KiB of fields: %+v, want 431", got[3])
			}
			testnet.WaitUntil(t, "the server's GOAWAY", func() bool { _, _, sent := c.GoAway(); return sent })
			if code, last, _ := c.GoAway(); code != http2.ErrCodeNo || last != 3 {
				t.Errorf("GOAWAY %v, last stream %d; want NO_ERROR, 3", code, last)
			}
			c.Request(t, 5, "GET", "h", "/after", true)
			close(app.release)
			got, ok = c.Wait(guardWait, func(s map[uint32]testnet.H2Stream, end bool) bool { return end })
			if !ok {
				t.Fatal("the connection did not end")
			}
			if got[1].Status != "200" || got[1].Data != len("ok /slow") {
				t.Errorf("the stream in flight: %+v, want 200 and its body", got[1])
			}
			if s, seen := got[5]; seen {
				t.Errorf("the stream after the GOAWAY got %+v, want nothing", s)
			}
			if n := app.served.Load(); n != 1 {
				t.Errorf("the handler served %d requests, want 1 (/slow)", n)
			}
		})
	}
}

// TestGuardTrailersAfterRefusal: a stream whose trailers come after a
// refused block ends with an error for its handler, which does not wait
// for them nor take its body as whole.
func TestGuardTrailersAfterRefusal(t *testing.T) {
	app := newGuardApp()
	c := testnet.DialH2(t, serveGuarded(t, app))
	c.Request(t, 1, "POST", "h", "/body", false)
	c.Data(t, 1, false, []byte("part of a body"))
	c.Request(t, 3, "GET", "h", "/huge", true, kib(100)...)
	if got, ok := c.Wait(guardWait, ended(3)); !ok || got[3].Status != "431" {
		t.Fatalf("100 KiB of fields: %+v, want 431", got[3])
	}
	c.Trailers(t, 1, "x-checksum", "1234")
	select {
	case err := <-app.bodyErr:
		if err == nil {
			t.Error("the handler read the body to its end; want an error (the trailers were not passed on)")
		}
	case <-time.After(guardWait):
		t.Fatal("the handler still waits for its body")
	}
}

// TestGuardFlood: header blocks after a refused one are dropped up to
// discardMax, then the connection ends, even while a stream keeps it open.
func TestGuardFlood(t *testing.T) {
	app := newGuardApp()
	defer close(app.release)
	addr := serveGuarded(t, app)
	fr := rawH2(t, addr)
	slow := hpackBlock([][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "h"}, {":path", "/slow"}})
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: slow, EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, 16<<10)
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: junk}); err != nil {
		t.Fatal(err)
	}
	const limit = 64 << 20
	written := 0
	for ; written < limit; written += len(junk) {
		if err := fr.WriteContinuation(3, false, junk); err != nil {
			break
		}
	}
	if written >= limit {
		t.Fatalf("the server took %d MiB of CONTINUATION frames after refusing the block", limit>>20)
	}
	t.Logf("the connection ended after %d KiB", written>>10)
}

// TestGuardUpgraded: a connection upgraded from HTTP/1.1 is guarded too.
func TestGuardUpgraded(t *testing.T) {
	app := newGuardApp()
	u, err := NewUpgradeServer(app, guardOptions)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		req, _ := http.NewRequest("GET", "http://h/upgraded", http.NoBody)
		u.serve(c, req, nil)
	}()
	conn, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := testnet.NewH2(t, conn)
	if got, ok := c.Wait(guardWait, ended(1)); !ok || got[1].Status != "200" {
		t.Fatalf("the upgrade request (stream 1): %+v, want 200", got[1])
	}
	c.Request(t, 3, "GET", "h", "/huge", true, kib(500)...)
	if got, ok := c.Wait(guardWait, ended(3)); !ok || got[3].Status != "431" {
		t.Fatalf("500 KiB of fields: %+v, want 431", got[3])
	}
}

// FuzzHeaderGuard: whatever a client sends, the guard neither panics nor
// hands the server more than it sent plus its own frames, and frames that
// are not header blocks pass as they came.
func FuzzHeaderGuard(f *testing.F) {
	frame := func(typ, flags byte, stream uint32, payload []byte) []byte {
		h := make([]byte, frameHeaderLen, frameHeaderLen+len(payload))
		h[0], h[1], h[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
		h[3], h[4] = typ, flags
		binary.BigEndian.PutUint32(h[5:], stream)
		return append(h, payload...)
	}
	f.Add(frame(typeHeaders, flagEndHeaders, 1, []byte{0x82}))
	f.Add(append(frame(typeHeaders, 0, 1, []byte{0x82}), frame(typeContinuation, flagEndHeaders, 1, []byte{0x84})...))
	f.Add(append(frame(typeHeaders, flagPadded|flagPriority, 1, []byte{2, 0, 0, 0, 0, 0, 0x82, 0, 0}),
		frame(typeContinuation, flagEndHeaders, 1, []byte{0x84})...))
	f.Add(append(frame(typeHeaders, 0, 3, make([]byte, 20000)), frame(typeHeaders, flagEndHeaders, 1, nil)...))
	f.Add(frame(0x0, flagEndStream, 1, []byte("data")))
	f.Fuzz(func(t *testing.T, in []byte) {
		g := newGuardedConn(readConn{Reader: bytes.NewReader(append([]byte(Preface), in...))}, newGuardLimits(8<<10, 0))
		g.flow = newSendFlow() // as Server's connections have
		out, _ := io.ReadAll(g)
		if n := len(g.flow.streams); n > maxTrackedStreams {
			t.Fatalf("the send-window ledger follows %d streams, more than %d", n, maxTrackedStreams)
		}
		if len(out) > len(Preface)+2*len(in)+len(g.limits.replacement)+64 {
			t.Fatalf("%d bytes in, %d out", len(in), len(out))
		}
		if !bytes.HasPrefix(out, []byte(Preface)) {
			t.Fatal("the preface did not pass first")
		}
		for rest := in; len(rest) >= frameHeaderLen; {
			n := frameHeaderLen + (int(rest[0])<<16 | int(rest[1])<<8 | int(rest[2]))
			if n > len(rest) || rest[3] == typeHeaders || rest[3] == typeContinuation {
				return
			}
			rest = rest[n:]
			if len(rest) < frameHeaderLen && !bytes.Equal(out[len(Preface):], in[:len(in)-len(rest)]) {
				t.Fatal("frames other than header blocks did not pass as they came")
			}
		}
	})
}

// readConn is a net.Conn that reads from a Reader.
type readConn struct {
	net.Conn
	io.Reader
}

func (c readConn) Read(p []byte) (int, error) { return c.Reader.Read(p) }

// TestGuardJoinsPaddedBlock: a block within the limit sent as a padded
// HEADERS frame with a priority and CONTINUATION frames reaches the
// handler whole (the guard joins it, leaving the padding out).
func TestGuardJoinsPaddedBlock(t *testing.T) {
	got := make(chan http.Header, 1)
	addr := serveGuarded(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header }))
	fr := rawH2(t, addr)
	fields := [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "h"}, {":path", "/joined"}}
	for i := range 6 {
		fields = append(fields, [2]string{fmt.Sprintf("x-part-%d", i), strings.Repeat(strconv.Itoa(i), 900)})
	}
	block := hpackBlock(fields)
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:700], EndStream: true,
		PadLength: 200, Priority: http2.PriorityParam{StreamDep: 0, Weight: 15}}); err != nil {
		t.Fatal(err)
	}
	for rest := block[700:]; len(rest) > 0; {
		part := rest[:min(len(rest), 1000)]
		rest = rest[len(part):]
		if err := fr.WriteContinuation(1, len(rest) == 0, part); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case h := <-got:
		for i := range 6 {
			if v := h.Get(fmt.Sprintf("x-part-%d", i)); v != strings.Repeat(strconv.Itoa(i), 900) {
				t.Errorf("x-part-%d: %d bytes, want the 900 sent", i, len(v))
			}
		}
	case <-time.After(guardWait):
		t.Fatal("the request did not reach the handler")
	}
}
