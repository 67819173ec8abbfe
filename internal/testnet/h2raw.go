package testnet

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// H2Client is a raw HTTP/2 client connection (prior knowledge) for tests
// that need what a client library will not do: grant no flow-control
// window, send a header block over the server's advertised limit, see
// each frame as it comes. A goroutine reads the connection, answers
// SETTINGS and PING, and records what each stream got.
type H2Client struct {
	// FrameSize is the largest HEADERS or CONTINUATION frame Request and
	// Trailers write (0: 16 KiB).
	FrameSize int

	conn net.Conn
	fr   *http2.Framer

	wmu sync.Mutex // owns writes on fr, enc and hb
	enc *hpack.Encoder
	hb  bytes.Buffer

	mu      sync.Mutex // owns streams, goAway and ended
	streams map[uint32]*H2Stream
	goAway  *http2.GoAwayFrame // the server's GOAWAY, if it sent one (its code and last stream)
	ended   bool               // the connection ended
}

// H2Stream is what one stream got from the server.
type H2Stream struct {
	Status   string        // :status of the response head ("" before it)
	Fields   []string      // the response's fields as "name: value", head and trailers
	Data     int           // bytes of DATA
	HeadEnds bool          // END_STREAM came on the response's first HEADERS (no body, no trailers)
	Ended    bool          // END_STREAM came
	Reset    bool          // the server sent RST_STREAM
	Code     http2.ErrCode // its error code
}

// DialH2 connects to addr with the client settings given and starts
// reading; the connection closes when the test ends.
func DialH2(t testing.TB, addr string, settings ...http2.Setting) *H2Client {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return NewH2(t, conn, settings...)
}

// NewH2 speaks HTTP/2 on conn (a connection to a server, or one upgraded
// to h2c): it sends the client preface and the settings given, and
// starts reading; the connection closes when the test ends.
func NewH2(t testing.TB, conn net.Conn, settings ...http2.Setting) *H2Client {
	t.Helper()
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(time.Minute)) // no test waits longer
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	c := &H2Client{conn: conn, fr: http2.NewFramer(conn, conn), streams: map[uint32]*H2Stream{}}
	c.fr.MaxHeaderListSize = 1 << 20
	c.enc = hpack.NewEncoder(&c.hb)
	if err := c.fr.WriteSettings(settings...); err != nil {
		t.Fatal(err)
	}
	go c.read()
	return c
}

// Request sends a request head on stream id: the pseudo-header fields
// (method, path at authority), then fields ("name", "value" pairs, in
// order), split into HEADERS and CONTINUATION frames of at most
// FrameSize. endStream: no body follows.
func (c *H2Client) Request(t testing.TB, id uint32, method, authority, path string, endStream bool, fields ...string) {
	t.Helper()
	all := append([]string{":method", method, ":scheme", "http", ":authority", authority, ":path", path}, fields...)
	c.headers(t, id, endStream, all)
}

// Trailers sends a header block that ends stream id: fields ("name",
// "value" pairs), split as Request splits.
func (c *H2Client) Trailers(t testing.TB, id uint32, fields ...string) {
	t.Helper()
	c.headers(t, id, true, fields)
}

// Data sends a DATA frame on stream id.
func (c *H2Client) Data(t testing.TB, id uint32, endStream bool, p []byte) {
	t.Helper()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.fr.WriteData(id, endStream, p); err != nil {
		t.Fatalf("writing DATA: %v", err)
	}
}

func (c *H2Client) headers(t testing.TB, id uint32, endStream bool, all []string) {
	t.Helper()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.hb.Reset()
	for i := 0; i+1 < len(all); i += 2 {
		_ = c.enc.WriteField(hpack.HeaderField{Name: all[i], Value: all[i+1]})
	}
	block := c.hb.Bytes()
	frameMax := c.FrameSize
	if frameMax <= 0 {
		frameMax = 16 << 10
	}
	first := block[:min(len(block), frameMax)]
	block = block[len(first):]
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndStream: endStream,
		EndHeaders: len(block) == 0}); err != nil {
		t.Fatalf("writing HEADERS: %v", err)
	}
	for len(block) > 0 {
		part := block[:min(len(block), frameMax)]
		block = block[len(part):]
		if err := c.fr.WriteContinuation(id, len(block) == 0, part); err != nil {
			t.Fatalf("writing CONTINUATION: %v", err)
		}
	}
}

// read records the frames until the connection ends.
func (c *H2Client) read() {
	dec := hpack.NewDecoder(4096, nil)
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.mu.Lock()
			c.ended = true
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				c.write(func() error { return c.fr.WriteSettingsAck() })
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				c.write(func() error { return c.fr.WritePing(true, f.Data) })
			}
		case *http2.HeadersFrame:
			s := c.stream(f.StreamID)
			first := s.Status == ""
			dec.SetEmitFunc(func(hf hpack.HeaderField) {
				if hf.Name == ":status" {
					s.Status = hf.Value
				}
				s.Fields = append(s.Fields, hf.Name+": "+hf.Value)
			})
			_, _ = dec.Write(f.HeaderBlockFragment())
			s.HeadEnds = first && f.StreamEnded()
			s.Ended = s.Ended || f.StreamEnded()
		case *http2.ContinuationFrame:
			_, _ = dec.Write(f.HeaderBlockFragment())
		case *http2.DataFrame:
			s := c.stream(f.StreamID)
			s.Data += len(f.Data())
			s.Ended = s.Ended || f.StreamEnded()
		case *http2.RSTStreamFrame:
			s := c.stream(f.StreamID)
			s.Reset, s.Code = true, f.ErrCode
		case *http2.GoAwayFrame:
			g := *f
			c.goAway = &g
		}
		c.mu.Unlock()
	}
}

// write runs a frame write under wmu (a failure shows as the connection
// ending).
func (c *H2Client) write(fn func() error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = fn()
}

func (c *H2Client) stream(id uint32) *H2Stream {
	s := c.streams[id]
	if s == nil {
		s = &H2Stream{}
		c.streams[id] = s
	}
	return s
}

// GoAway returns the error code and last stream ID of the server's
// GOAWAY, and whether it sent one.
func (c *H2Client) GoAway() (code http2.ErrCode, lastStream uint32, sent bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.goAway == nil {
		return 0, 0, false
	}
	return c.goAway.ErrCode, c.goAway.LastStreamID, true
}

// Wait polls, for up to d, until done holds for what the streams got so
// far (ended: the connection ended); it returns whether it did, and a
// copy of the streams.
func (c *H2Client) Wait(d time.Duration, done func(streams map[uint32]H2Stream, ended bool) bool) (map[uint32]H2Stream, bool) {
	deadline := time.Now().Add(d)
	for {
		c.mu.Lock()
		snap := map[uint32]H2Stream{}
		for id, s := range c.streams {
			snap[id] = *s
		}
		ok := done(snap, c.ended)
		c.mu.Unlock()
		if ok || time.Now().After(deadline) {
			return snap, ok
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Reset sends RST_STREAM (CANCEL) for stream id.
func (c *H2Client) Reset(id uint32) {
	c.write(func() error { return c.fr.WriteRSTStream(id, http2.ErrCodeCancel) })
}

// RapidReset opens n streams from first (odd IDs), resetting each
// (CANCEL) right after its request head, as a Rapid Reset flood does; it
// stops at the first write that fails (the server closed the connection)
// and returns how many pairs it wrote.
func (c *H2Client) RapidReset(first uint32, n int, authority, path string) int {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for i := range n {
		id := first + 2*uint32(i)
		c.hb.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", authority}, {":path", path}} {
			_ = c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hb.Bytes(), EndStream: true, EndHeaders: true})
		if err == nil {
			err = c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
		}
		if err != nil {
			return i
		}
	}
	return n
}

// WindowUpdate grants n more bytes of flow-control window to stream id
// (0: the connection).
func (c *H2Client) WindowUpdate(id, n uint32) {
	c.write(func() error { return c.fr.WriteWindowUpdate(id, n) })
}

// Close closes the connection (the client's FIN).
func (c *H2Client) Close() { _ = c.conn.Close() }
