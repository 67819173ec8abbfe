package h2c

import (
	"context"
	"encoding/binary"
	"sync"
)

// The send windows of a connection, as its frames say them.
//
// A handler bounds each write to its client by a deadline
// (proxycore.ProgressWriter), and on HTTP/2 a missed deadline resets the
// stream. A write that must wait for flow-control window is as fast as
// the client grants it, so the handler cuts it into pieces small enough
// for a slow but steady client to take each within the deadline; pieces
// cost throughput (one hand-off to the server's frame writer each). A
// write the client's windows already cover waits for nothing but TCP, so
// it can go whole. SendFlow tells the handler which case it is in: the
// guard (guard.go) reads the windows the client grants (its SETTINGS
// INITIAL_WINDOW_SIZE, its WINDOW_UPDATE frames, the streams it opens and
// resets) and the connection's writes show what the server used of them
// (the DATA frames it sends, the streams it ends), which is the same
// ledger the server keeps, read from the frames instead of its insides.
//
// The ledger lags the server's own count a little, both ways: it counts a
// DATA frame when the server hands it to the connection, and the server
// counted it when it framed it, so what the server has framed but not yet
// written (its connection's write buffer) and what a handler's Write left
// in the server's stream buffer are taken off every answer (lag); and it
// counts a client's WINDOW_UPDATE when the server's frame reader reads it,
// a moment before the server applies it (a write that goes whole on it
// waits that moment). A handler
// does not know which stream is its own (net/http does not say), so a
// write goes whole only when every open stream of its connection has room
// for it, and the connection has room for one such write per stream on top
// of what the other writers took: one client that reads slowly makes the
// writes on its connection go in pieces, as all of them did before.

// Frame types and settings the ledger reads (RFC 9113 §6).
const (
	typeData             = 0x0
	typeSettings         = 0x4
	typeWindowUpdate     = 0x8
	flagAck              = 0x1
	settingInitialWindow = 0x4
	defaultWindow        = 65535 // RFC 9113 §6.9.2, both the stream's and the connection's
)

// lag is what the ledger may not have seen of the window the server used:
// its connection's write buffer (4 KiB) and a handler's stream buffer
// (4 KiB, net/http's handlerChunkWriteSize), each with a frame header.
const lag = 2 * (4<<10 + frameHeaderLen)

// maxTrackedStreams bounds the ledger's streams: a connection with more
// open at once than that is no longer followed (its writes go in pieces).
// net/http's server refuses streams over its MaxConcurrentStreams (100 for
// the proxies), so only a client whose streams the server never ends, nor
// resets, reaches it.
const maxTrackedStreams = 1024

// SendFlow is the ledger of one HTTP/2 server connection's send windows.
// Its methods are safe for concurrent use (mu guards everything: the
// guard's reads, the server's writes and the handlers' questions come on
// different goroutines).
type SendFlow struct {
	mu       sync.Mutex
	initial  int64            // the client's SETTINGS_INITIAL_WINDOW_SIZE
	conn     int64            // the connection's send window
	taken    int64            // what handlers took of conn for writes in progress (Take)
	streams  map[uint32]int64 // each open stream's send window
	lastOpen uint32           // the highest stream the client opened
	lost     bool             // the ledger stopped following (a frame it could not read, too many streams): Take says no

	// The frame being written (the server writes whole frames in order,
	// in pieces of its buffer's size).
	head  [frameHeaderLen]byte
	headN int // bytes of head so far
	skip  int // payload bytes of the current frame still to pass
}

func newSendFlow() *SendFlow {
	return &SendFlow{initial: defaultWindow, conn: defaultWindow, streams: map[uint32]int64{}}
}

type sendFlowKey struct{}

// SendFlowOf is the ledger of the connection a request came on (nil for a
// request that did not come through Server: an upgraded connection, an
// HTTP/1.1 one). A nil ledger takes nothing.
func SendFlowOf(ctx context.Context) *SendFlow {
	f, _ := ctx.Value(sendFlowKey{}).(*SendFlow)
	return f
}

// Take reports whether a handler's Write of n bytes goes out without
// waiting for flow-control window, whatever stream it is on, and if so
// takes n of the connection's window until Give: every open stream has
// room for n, and the connection for n per open stream beyond what other
// writes in progress took.
func (f *SendFlow) Take(n int) bool {
	if f == nil {
		return false
	}
	need := int64(n) + lag
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lost || f.conn-f.taken < need*int64(max(len(f.streams), 1)) {
		return false
	}
	for _, w := range f.streams {
		if w < need {
			return false
		}
	}
	f.taken += need
	return true
}

// Give returns what Take(n) took, once the write is done.
func (f *SendFlow) Give(n int) {
	f.mu.Lock()
	f.taken -= int64(n) + lag
	f.mu.Unlock()
}

// clientFrame follows a frame the client sent, whose header is h and
// whose payload starts payload (all of it for SETTINGS and WINDOW_UPDATE,
// nil when it was longer than the guard's buffer).
func (f *SendFlow) clientFrame(h []byte, payload []byte) {
	length := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
	typ, flags := h[3], h[4]
	stream := binary.BigEndian.Uint32(h[5:9]) & (1<<31 - 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch typ {
	case typeHeaders:
		if stream > f.lastOpen {
			f.lastOpen = stream
			if len(f.streams) == maxTrackedStreams {
				f.lost = true
				return
			}
			f.streams[stream] = f.initial
		}
	case typeRSTStream:
		delete(f.streams, stream)
	case typeWindowUpdate:
		if len(payload) < 4 || length != 4 {
			f.lost = true // a frame the server ends the connection for
			return
		}
		inc := int64(binary.BigEndian.Uint32(payload) & (1<<31 - 1))
		if stream == 0 {
			f.conn += inc
		} else if w, ok := f.streams[stream]; ok {
			f.streams[stream] = w + inc
		}
	case typeSettings:
		if flags&flagAck != 0 {
			return
		}
		if payload == nil || len(payload) != length {
			f.lost = true
			return
		}
		f.settings(payload)
	}
}

// settings applies a SETTINGS frame's INITIAL_WINDOW_SIZE: every open
// stream's window moves by the change (RFC 9113 §6.9.2).
func (f *SendFlow) settings(payload []byte) {
	for ; len(payload) >= 6; payload = payload[6:] {
		if binary.BigEndian.Uint16(payload) != settingInitialWindow {
			continue
		}
		v := int64(binary.BigEndian.Uint32(payload[2:]))
		delta := v - f.initial
		f.initial = v
		for s, w := range f.streams {
			f.streams[s] = w + delta
		}
	}
}

// serverBytes follows the bytes the server is about to write.
func (f *SendFlow) serverBytes(b []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(b) > 0 {
		if f.skip > 0 {
			k := min(f.skip, len(b))
			f.skip -= k
			b = b[k:]
			continue
		}
		k := copy(f.head[f.headN:], b)
		f.headN += k
		b = b[k:]
		if f.headN < frameHeaderLen {
			return
		}
		f.headN = 0
		f.serverFrame()
	}
}

// serverFrame follows the frame whose header is head.
func (f *SendFlow) serverFrame() {
	h := f.head[:]
	length := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
	typ, flags := h[3], h[4]
	stream := binary.BigEndian.Uint32(h[5:9]) & (1<<31 - 1)
	f.skip = length
	switch {
	case typ == typeData:
		f.conn -= int64(length)
		if w, ok := f.streams[stream]; ok {
			f.streams[stream] = w - int64(length)
		}
		if flags&flagEndStream != 0 {
			delete(f.streams, stream)
		}
	case typ == typeHeaders && flags&flagEndStream != 0, typ == typeRSTStream:
		delete(f.streams, stream)
	}
}
