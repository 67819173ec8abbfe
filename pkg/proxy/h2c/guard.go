package h2c

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The header-block guard. net/http's HTTP/2 server answers 431 to a
// request whose header list is over its limit, but only when the block
// arrives in a way its guard against CONTINUATION floods lets it decode:
// a fragment more than twice the room left in the list, or any
// CONTINUATION frame after the list went over, ends the whole connection
// with GOAWAY PROTOCOL_ERROR, every other stream on it with it, and the
// client never learns why. The guard sits under the server, on the bytes
// a client sends, and reads nothing but frame headers:
//
//   - A header block of at most blockMax bytes (twice the server's list
//     size) reaches the server as one HEADERS frame: a block sent in
//     pieces (HEADERS and CONTINUATION frames) is held, up to blockMax,
//     and handed on whole. The server decodes it and answers 431 if its
//     fields are over the limit, and the connection goes on.
//   - A longer block is not handed on. In its place the server gets a
//     block of its own making on the same stream, too long by a few bytes
//     (so the server answers the stream 431, as it would any request
//     over the limit), then a GOAWAY, as if from the client, so that it
//     finishes the streams it has and closes the connection gracefully
//     (its own GOAWAY tells the client the last stream it took). The
//     connection cannot go on: the block's HPACK instructions, which the
//     server has not decoded, may change the table later blocks refer to.
//     From then on the guard drops the client's header blocks (a new
//     stream is one the server's GOAWAY refuses; a stream's trailers end
//     that stream with an error) and, past discardMax bytes of them, ends
//     the connection.
//
// What the guard holds of a connection is bounded three ways, whatever
// the client sends: the bytes of an open block, frame headers included
// (9 bytes a frame, so a block of empty CONTINUATION frames is counted
// too), by blockMax; its frames by maxBlockFrames (a longer block is
// refused as one too long); and the time from its first frame to its
// END_HEADERS by the server's HeaderTimeout (a block still open then, when
// its next frame comes, ends the connection). A client silent in an open
// block is the server's idle timeout's. So a connection costs the guard at
// most its read buffer (4 KiB) and blockMax (17 KiB for the proxies'
// 8 KiB of fields), and one that sends frames without progress (an endless
// block of empty CONTINUATION frames) holds nothing more: its block is
// refused at maxBlockFrames, the frames after it are dropped within
// discardMax, and the connection ends.
//
// What a header block holds is the server's business: the guard counts
// the encoded bytes, which are at most about the decoded ones (an HPACK
// field costs at most 8 bytes around its name and value, 32 in the
// list's count), so a block the guard takes for too long is one the
// server would refuse too, unless a client made its strings longer with
// Huffman coding than they are, which no encoder does.

// HTTP/2 frame facts (RFC 9113 §4.1, §6.2, §6.10).
const (
	frameHeaderLen   = 9
	flagEndStream    = 0x1
	flagEndHeaders   = 0x4
	flagPadded       = 0x8
	flagPriority     = 0x20
	typeHeaders      = 0x1
	typeRSTStream    = 0x3
	typeContinuation = 0x9
)

// serverMaxReadFrame is the largest frame net/http's HTTP/2 server takes
// (its MaxReadFrameSize default, which ServerOptions keeps).
const serverMaxReadFrame = 1 << 20

// discardMax is what the guard reads and drops of header blocks after it
// replaced one, before it ends the connection.
const discardMax = 1 << 20

// maxBlockFrames bounds the frames of one header block (a HEADERS frame
// and its CONTINUATION frames). A client splits a block at its frame size
// (16 KiB at least, RFC 9113 §4.2), so a block the server takes (17 KiB
// for the proxies) needs two; a longer one is refused as too long.
const maxBlockFrames = 64

// errBlockTimeout ends a connection whose client took longer than the
// header timeout to finish a header block.
var errBlockTimeout = errors.New("h2c: a header block was not finished within the header timeout; closing the connection")

// errHeaderFlood ends a connection whose client kept sending header
// blocks after one was refused.
var errHeaderFlood = errors.New("h2c: more than 1 MiB of header blocks after one over the limit; closing the connection")

// listSize is what net/http's HTTP/2 server allows a header list for a
// server's MaxHeaderBytes (0: its default): the value plus the 32 bytes
// of ten fields' overhead.
func listSize(maxHeaderBytes int) int {
	if maxHeaderBytes <= 0 {
		maxHeaderBytes = 1 << 20 // http.DefaultMaxHeaderBytes
	}
	return maxHeaderBytes + 10*32
}

// guardLimits are what the guard of a server allows.
type guardLimits struct {
	blockMax    int    // the longest header block handed on, frame headers included
	replacement []byte // the HPACK block sent in place of a longer one (static table only)
	// blockTime bounds a block from its first frame to its last (the
	// server's HeaderTimeout; 0: none).
	blockTime time.Duration
	now       func() time.Time // the clock (tests stop it)
}

// newGuardLimits computes the limits for a server's MaxHeaderBytes and
// HeaderTimeout.
func newGuardLimits(maxHeaderBytes int, headerTimeout time.Duration) *guardLimits {
	list := listSize(maxHeaderBytes)
	g := &guardLimits{blockMax: min(2*list, serverMaxReadFrame), blockTime: headerTimeout, now: time.Now}
	// The replacement: a request the server can parse (:method, :scheme,
	// :path, all from the static table, so the decoder's dynamic table is
	// not touched) and one field never indexed whose size (name, value and
	// 32) is over the list: the server decodes it as too long (431). Its
	// value may be as long as the list (the server's longest string), and
	// Huffman codes 'a' in 5 bits, so the block is about 5/8 of the list
	// and fits one frame.
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, f := range []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
		{Name: ":path", Value: "/"}, {Name: "x-ebb-header-block", Value: strings.Repeat("a", list), Sensitive: true}} {
		_ = enc.WriteField(f) // writes to a bytes.Buffer do not fail
	}
	g.replacement = b.Bytes()
	return g
}

// guardListener hands out its connections under a guard.
type guardListener struct {
	net.Listener
	limits *guardLimits
}

func (l guardListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	g := newGuardedConn(c, l.limits)
	g.flow = newSendFlow()
	return g, nil
}

// headerGuard is an HTTP/2 server connection whose reads go through the
// guard; writes and the rest are the connection's. Both are followed by
// the connection's send-window ledger when it has one (flow.go).
type headerGuard struct {
	net.Conn
	limits *guardLimits
	flow   *SendFlow // nil: not followed (an upgraded connection)
	br     *bufio.Reader

	out      []byte    // bytes to hand the server before any more of the client's
	preface  int       // bytes of the client preface still to pass
	pass     int       // bytes of the current frame still to pass
	drop     int       // bytes of the current frame still to drop
	held     []byte    // the frames of a header block being collected (none: no block is open)
	frames   int       // how many
	blockEnd time.Time // the block must end by then (limits.blockTime)
	dropping bool      // the rest of the current block is dropped (after a refusal)
	refused  bool      // a block was refused: header blocks are dropped from now on
	refusedS uint32    // the stream of the refused block
	dropped  int       // bytes dropped since
	resets   resetBudget
	err      error // the guard's own end of the connection
}

// newGuardedConn guards c, whose client preface is still to come. The
// read buffer (4 KiB) also makes the server's two reads of a small frame
// (its header, then its payload) one system call.
func newGuardedConn(c net.Conn, limits *guardLimits) *headerGuard {
	return &headerGuard{Conn: c, limits: limits, br: bufio.NewReaderSize(c, 4<<10), preface: len(Preface)}
}

func (g *headerGuard) Read(p []byte) (int, error) {
	for {
		switch {
		case len(g.out) > 0:
			n := copy(p, g.out)
			g.out = g.out[n:]
			if len(g.out) == 0 {
				g.out = nil
			}
			return n, nil
		case g.err != nil:
			return 0, g.err
		case g.preface > 0:
			n, err := g.br.Read(p[:min(len(p), g.preface)])
			g.preface -= n
			return n, err
		case g.pass > 0:
			n, err := g.br.Read(p[:min(len(p), g.pass)])
			g.pass -= n
			return n, err
		case g.drop > 0:
			n, err := g.br.Discard(min(g.drop, max(g.br.Buffered(), 1)))
			g.drop -= n
			if err != nil {
				return 0, err
			}
			continue
		}
		if err := g.nextFrame(); err != nil {
			if len(g.held) > 0 { // the client's frames so far, for the server to judge
				g.out, g.held = g.held, nil
				g.err = err
				continue
			}
			return 0, err
		}
	}
}

// nextFrame reads a frame header and decides what happens to the frame:
// it sets pass, drop or out (held frames and a whole frame that completes
// them), or err.
func (g *headerGuard) nextFrame() error {
	h, err := g.br.Peek(frameHeaderLen)
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	length := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
	typ, flags := h[3], h[4]
	stream := binary.BigEndian.Uint32(h[5:9]) & (1<<31 - 1)
	isHeaders, isCont := typ == typeHeaders, typ == typeContinuation
	if typ == typeRSTStream && !g.resets.take(g.limits.now()) {
		g.held, g.out, g.err = nil, nil, errRapidReset // the server gets nothing more of this client
		return nil
	}
	if g.flow != nil && !(g.refused && isHeaders) {
		if err := g.follow(h, typ, length); err != nil {
			return err
		}
	}
	switch {
	case g.refused && (isHeaders || isCont && g.dropping):
		// After a refusal: drop every header block, within discardMax.
		g.dropped += frameHeaderLen + length
		if g.dropped > discardMax {
			g.err = errHeaderFlood
			return nil
		}
		g.dropping = flags&flagEndHeaders == 0
		g.drop = frameHeaderLen + length
		if isHeaders && stream < g.refusedS {
			// The trailers of a stream the server has: it must not wait
			// for them, nor pass the stream on as complete without them.
			g.out = rstStream(stream)
		}
	case len(g.held) > 0 && isCont && stream == heldStream(g.held):
		if g.limits.blockTime > 0 && g.limits.now().After(g.blockEnd) {
			g.held, g.err = nil, errBlockTimeout // the server gets nothing of it
			return nil
		}
		if len(g.held)+frameHeaderLen+length > g.limits.blockMax || g.frames == maxBlockFrames {
			return g.refuse(stream, frameHeaderLen+length, flags)
		}
		if err := g.hold(length); err != nil {
			return err
		}
		g.frames++
		if flags&flagEndHeaders != 0 {
			g.out, g.held = coalesce(g.held), nil
		}
	case len(g.held) > 0:
		// Anything else inside a block is the client's protocol error:
		// the server sees the frames as sent and answers it.
		g.out, g.held = g.held, nil
		g.pass = frameHeaderLen + length
	case isHeaders && frameHeaderLen+length > g.limits.blockMax:
		return g.refuse(stream, frameHeaderLen+length, flags)
	case isHeaders && flags&flagEndHeaders == 0:
		if err := g.hold(length); err != nil {
			return err
		}
		g.frames = 1
		if g.limits.blockTime > 0 {
			g.blockEnd = g.limits.now().Add(g.limits.blockTime)
		}
	default:
		g.pass = frameHeaderLen + length
	}
	return nil
}

// follow shows the ledger a frame of the client whose header h is next,
// with its payload for the frames whose payload it reads (a few bytes:
// SETTINGS, WINDOW_UPDATE; one longer than the read buffer is shown
// without it).
func (g *headerGuard) follow(h []byte, typ byte, length int) error {
	if typ != typeSettings && typ != typeWindowUpdate || frameHeaderLen+length > g.br.Size() {
		g.flow.clientFrame(h, nil)
		return nil
	}
	b, err := g.br.Peek(frameHeaderLen + length)
	if err != nil {
		return err
	}
	g.flow.clientFrame(b[:frameHeaderLen], b[frameHeaderLen:])
	return nil
}

// Write hands the server's bytes to the connection, shown to the ledger
// first (the server counted their window when it framed them).
func (g *headerGuard) Write(p []byte) (int, error) {
	if g.flow != nil {
		g.flow.serverBytes(p)
	}
	return g.Conn.Write(p)
}

// hold appends the frame whose header is next, and its payload, to held.
func (g *headerGuard) hold(length int) error {
	start := len(g.held)
	g.held = append(g.held, make([]byte, frameHeaderLen+length)...)
	n, err := io.ReadFull(g.br, g.held[start:])
	g.held = g.held[:start+n] // what came, if the connection ended
	for h := int64(len(g.held)); ; {
		if m := heldMost.Load(); h <= m || heldMost.CompareAndSwap(m, h) {
			break
		}
	}
	return err
}

// heldMost is the most any guard of the process held of one header block
// since TakeHeldMost last read it.
var heldMost atomic.Int64

// TakeHeldMost returns the most bytes any guard of this process held of
// one header block, frame headers included, since its last call, and
// starts over. The bound a guard keeps is blockMax (17 KiB for the
// proxies' 8 KiB of fields): the differential fuzzer checks it after each
// input, a resource the bytes the apps see cannot show (a guard that held
// an endless block of empty CONTINUATION frames served what the reference
// served, with unbounded memory).
func TakeHeldMost() int64 { return heldMost.Swap(0) }

// refuse replaces the header block whose frame (of n bytes, flags) is
// next: the server gets the replacement on stream, then a GOAWAY; the
// rest of the block is dropped.
func (g *headerGuard) refuse(stream uint32, n int, flags byte) error {
	var b bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: g.limits.replacement,
		EndStream: true, EndHeaders: true})
	_ = fr.WriteGoAway(0, http2.ErrCodeNo, nil)
	g.out, g.held = b.Bytes(), nil
	g.refused, g.refusedS, g.dropping = true, stream, flags&flagEndHeaders == 0
	g.dropped = n
	g.drop = n
	return nil
}

// rstStream is a client's RST_STREAM (CANCEL) for stream.
func rstStream(stream uint32) []byte {
	var b bytes.Buffer
	_ = http2.NewFramer(&b, nil).WriteRSTStream(stream, http2.ErrCodeCancel)
	return b.Bytes()
}

// heldStream is the stream of the first held frame.
func heldStream(held []byte) uint32 {
	return binary.BigEndian.Uint32(held[5:9]) & (1<<31 - 1)
}

// coalesce turns held frames (a HEADERS frame and its CONTINUATION
// frames) into one HEADERS frame with END_HEADERS: the fragments in
// order, the HEADERS frame's priority kept, padding left out. Frames it
// cannot read (padding longer than a frame) are handed on as they came,
// for the server to refuse.
func coalesce(held []byte) []byte {
	first := held[:frameHeaderLen]
	flags := first[4]
	var prefix []byte
	var frags [][]byte
	for rest, i := held, 0; len(rest) > 0; i++ {
		length := int(rest[0])<<16 | int(rest[1])<<8 | int(rest[2])
		payload := rest[frameHeaderLen : frameHeaderLen+length]
		rest = rest[frameHeaderLen+length:]
		if i > 0 {
			frags = append(frags, payload)
			continue
		}
		if flags&flagPadded != 0 {
			if len(payload) < 1 || int(payload[0]) > len(payload)-1 {
				return held
			}
			payload = payload[1 : len(payload)-int(payload[0])]
		}
		if flags&flagPriority != 0 {
			if len(payload) < 5 {
				return held
			}
			prefix, payload = payload[:5], payload[5:]
		}
		frags = append(frags, payload)
	}
	n := len(prefix)
	for _, f := range frags {
		n += len(f)
	}
	out := make([]byte, frameHeaderLen, frameHeaderLen+n)
	out[0], out[1], out[2] = byte(n>>16), byte(n>>8), byte(n)
	out[3] = typeHeaders
	out[4] = flags&^flagPadded | flagEndHeaders
	copy(out[5:9], first[5:9])
	out = append(out, prefix...)
	for _, f := range frags {
		out = append(out, f...)
	}
	return out
}
