package h2c

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// h2frame is one raw frame.
func h2frame(typ, flags byte, stream uint32, payload []byte) []byte {
	h := make([]byte, frameHeaderLen, frameHeaderLen+len(payload))
	h[0], h[1], h[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	h[3], h[4] = typ, flags
	binary.BigEndian.PutUint32(h[5:], stream)
	return append(h, payload...)
}

// emptyContinuations is a HEADERS frame without END_HEADERS, then n
// empty CONTINUATION frames of its block.
func emptyContinuations(n int) []byte {
	in := h2frame(typeHeaders, 0, 1, []byte{0x82})
	cont := h2frame(typeContinuation, 0, 1, nil)
	return append(in, bytes.Repeat(cont, n)...)
}

// TestGuardEmptyContinuationsBounded: a block that never ends, made of
// empty CONTINUATION frames, holds at most maxBlockFrames frames (each
// counted with its 9-byte header), is refused, and the connection ends
// once discardMax of its frames were dropped: the server never gets them.
// Before, the guard counted payload bytes only, so it held every frame
// header (9 bytes each) of an endless block: 20 million frames took
// hundreds of MB.
func TestGuardEmptyContinuationsBounded(t *testing.T) {
	const n = 1 << 20 // 9 MiB of frames, far past what the guard may take
	in := emptyContinuations(n)
	src := &countingReader{r: bytes.NewReader(append([]byte(Preface), in...))}
	g := newGuardedConn(readConn{Reader: src}, newGuardLimits(8<<10, 0))
	var out bytes.Buffer
	buf := make([]byte, 32<<10)
	maxHeld := 0
	var err error
	for {
		var k int
		k, err = g.Read(buf)
		out.Write(buf[:k])
		maxHeld = max(maxHeld, cap(g.held))
		if err != nil {
			break
		}
	}
	if !errors.Is(err, errHeaderFlood) {
		t.Fatalf("the guard ended with %v, want errHeaderFlood", err)
	}
	if maxHeld > g.limits.blockMax+frameHeaderLen {
		t.Errorf("the guard held %d bytes of one block, over blockMax %d", maxHeld, g.limits.blockMax)
	}
	taken := src.n - len(Preface)
	if taken > discardMax+g.limits.blockMax+64<<10 {
		t.Errorf("the guard read %d bytes of empty frames before ending the connection, want about discardMax (%d)", taken, discardMax)
	}
	// The server got the preface, the replacement (431) and a GOAWAY, no empty frame.
	if rest := out.Bytes()[len(Preface):]; bytes.Contains(rest, h2frame(typeContinuation, 0, 1, nil)) {
		t.Error("an empty CONTINUATION frame reached the server")
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestGuardBlockFrames: a block of up to maxBlockFrames frames is handed
// on whole; one more frame refuses it (the replacement, then GOAWAY).
func TestGuardBlockFrames(t *testing.T) {
	for _, frames := range []int{maxBlockFrames, maxBlockFrames + 1} {
		in := append(emptyContinuations(frames-2), h2frame(typeContinuation, flagEndHeaders, 1, []byte{0x84})...)
		g := newGuardedConn(readConn{Reader: bytes.NewReader(append([]byte(Preface), in...))}, newGuardLimits(8<<10, 0))
		out, _ := io.ReadAll(g)
		out = out[len(Preface):]
		joined := h2frame(typeHeaders, flagEndHeaders, 1, []byte{0x82, 0x84})
		switch {
		case frames <= maxBlockFrames && !bytes.Equal(out, joined):
			t.Errorf("%d frames: the server got %x, want the block joined %x", frames, out, joined)
		case frames > maxBlockFrames && !bytes.Contains(out, g.limits.replacement):
			t.Errorf("%d frames: the server got %x, want the block refused", frames, out)
		}
	}
}

// TestGuardBlockTimeout: a block whose next frame comes after the header
// timeout ends the connection, and the server gets nothing of it.
func TestGuardBlockTimeout(t *testing.T) {
	now := time.Unix(1000, 0)
	limits := newGuardLimits(8<<10, 10*time.Second)
	limits.now = func() time.Time { return now }
	// The guard reads each piece once it has handled the ones before: the
	// clock moves just before the last frame arrives.
	r := &pieces{in: [][]byte{
		append([]byte(Preface), h2frame(typeHeaders, 0, 1, []byte{0x82})...),
		h2frame(typeContinuation, 0, 1, []byte{0x84}), // in time
		h2frame(typeContinuation, flagEndHeaders, 1, []byte{0x86}),
	}, before: func(i int) {
		if i == 2 {
			now = now.Add(11 * time.Second)
		}
	}}
	out, err := io.ReadAll(newGuardedConn(readConn{Reader: r}, limits))
	if !errors.Is(err, errBlockTimeout) {
		t.Fatalf("the guard ended with %v, want errBlockTimeout", err)
	}
	if len(out) != len(Preface) {
		t.Errorf("the server got %d bytes after the preface, want none", len(out)-len(Preface))
	}
}

// pieces reads its pieces one per Read, calling before(i) first.
type pieces struct {
	in     [][]byte
	i      int
	before func(i int)
}

func (p *pieces) Read(b []byte) (int, error) {
	if p.i == len(p.in) {
		return 0, io.EOF
	}
	p.before(p.i)
	n := copy(b, p.in[p.i])
	if n < len(p.in[p.i]) {
		p.in[p.i] = p.in[p.i][n:]
		return n, nil
	}
	p.i++
	return n, nil
}

// TestGuardContinuationFloodClosed: over TCP, a client that sends HEADERS
// without END_HEADERS and then empty CONTINUATION frames (up to 20
// million, 180 MB) has its connection closed after a bounded number of
// them, and the process's heap stays bounded (logged: before, during,
// after). Before, the server took every frame, and the queue-proxy grew
// from 13 to 536 MB.
func TestGuardContinuationFloodClosed(t *testing.T) {
	addr := serveGuarded(t, newGuardApp())
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	go func() { _, _ = io.Copy(io.Discard, conn) }()
	fr := http2.NewFramer(conn, conn)
	_, _ = io.WriteString(conn, http2.ClientPreface)
	_ = fr.WriteSettings()
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x82}}); err != nil {
		t.Fatal(err)
	}
	before := heapInUse()
	batch := bytes.Repeat(h2frame(typeContinuation, 0, 1, nil), 1<<12)
	const limit = 20_000_000
	sent, peak := 0, before
	for ; sent < limit; sent += 1 << 12 {
		if _, err := conn.Write(batch); err != nil {
			break
		}
		if sent%(1<<18) == 0 {
			peak = max(peak, heapInUse())
		}
	}
	t.Logf("%d empty CONTINUATION frames sent; heap in use %d KiB before, %d KiB peak, %d KiB after",
		sent, before>>10, peak>>10, heapInUse()>>10)
	if sent >= limit {
		t.Fatalf("the server took %d empty CONTINUATION frames without closing the connection", sent)
	}
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestGuardManyOpenBlocks: many connections, each holding one open block
// as large as the guard lets it (HEADERS, then empty CONTINUATION frames
// up to maxBlockFrames, and as many bytes as blockMax allows), cost the
// process a bounded amount each, and it is returned when they leave
// (logged; the bound checked is generous: what net/http's server itself
// keeps per connection is most of it).
func TestGuardManyOpenBlocks(t *testing.T) {
	const conns = 200
	addr := serveGuarded(t, newGuardApp())
	runtime.GC()
	before := heapInUse()
	fill := make([]byte, 16000) // with the frames' headers, close to blockMax (17 KiB)
	var cs []net.Conn
	for range conns {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		go func() { _, _ = io.Copy(io.Discard, c) }()
		fr := http2.NewFramer(c, c)
		_, _ = io.WriteString(c, http2.ClientPreface)
		_ = fr.WriteSettings()
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: fill}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(bytes.Repeat(h2frame(typeContinuation, 0, 1, nil), maxBlockFrames-2)); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing the server sends tells that it has read an open block, so
	// the heap is sampled for half a second: a measure, not a deadline.
	during := heapInUse()
	for range 50 {
		time.Sleep(10 * time.Millisecond)
		during = max(during, heapInUse())
	}
	for _, c := range cs {
		c.Close()
	}
	var after uint64
	for range 100 {
		time.Sleep(10 * time.Millisecond)
		runtime.GC()
		if after = heapInUse(); after < before+(during-before)/4 {
			break
		}
	}
	per := (int64(during) - int64(before)) / conns
	t.Logf("%d connections, each holding an open block: heap in use %d KiB before, %d KiB with them (%d KiB each), %d KiB after they left",
		conns, before>>10, during>>10, per>>10, after>>10)
	if per > 256<<10 {
		t.Errorf("each connection with an open block costs %d KiB of heap, want under 256 KiB", per>>10)
	}
	if after > before+(during-before)/2 {
		t.Errorf("the heap did not return when the connections left: %d KiB, from %d KiB", after>>10, during>>10)
	}
}
