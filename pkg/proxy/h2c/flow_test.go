package h2c

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"golang.org/x/net/http2"
)

// frames builds HTTP/2 frames with a Framer.
type frames struct {
	b  bytes.Buffer
	fr *http2.Framer
}

func newFrames() *frames {
	f := &frames{}
	f.fr = http2.NewFramer(&f.b, nil)
	return f
}

// take returns the frames built so far and starts anew.
func (f *frames) take() []byte {
	out := bytes.Clone(f.b.Bytes())
	f.b.Reset()
	return out
}

// client shows the ledger the frames b as its guard would pass them.
func clientFrames(t *testing.T, flow *SendFlow, b []byte) {
	t.Helper()
	g := newGuardedConn(readConn{Reader: bytes.NewReader(append([]byte(Preface), b...))}, newGuardLimits(8<<10, 0))
	g.flow = flow
	got, err := io.ReadAll(g)
	if err != nil {
		t.Fatalf("reading through the guard: %v", err)
	}
	if want := append([]byte(Preface), b...); !bytes.Equal(got, want) {
		t.Fatalf("the guard changed the frames: %d bytes in, %d out", len(want), len(got))
	}
}

// serverFrames shows the ledger the frames b as the server writes them,
// in writes of step bytes.
func serverFrames(flow *SendFlow, b []byte, step int) {
	for len(b) > 0 {
		k := min(step, len(b))
		flow.serverBytes(b[:k])
		b = b[k:]
	}
}

// The ledger follows the windows the client grants and the server uses,
// and Take says yes only when every open stream and the connection have
// room for the write (plus what the ledger may not have seen yet).
func TestSendFlowTake(t *testing.T) {
	t.Parallel()
	const write = 32 << 10
	headers := func(f *frames, stream uint32) {
		_ = f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: []byte{0x82}, EndHeaders: true, EndStream: true})
	}
	for _, step := range []int{1, 7, 4 << 10, 1 << 20} {
		flow := newSendFlow()
		c, s := newFrames(), newFrames()
		check := func(what string, want bool) {
			t.Helper()
			got := flow.Take(write)
			if got {
				flow.Give(write)
			}
			if got != want {
				t.Errorf("server writes of %d bytes: %s: Take(%d) = %v, want %v", step, what, write, got, want)
			}
		}
		// Default windows (64 KiB - 1) and one stream: room for one write.
		_ = c.fr.WriteSettings()
		headers(c, 1)
		clientFrames(t, flow, c.take())
		check("one stream, default windows", true)
		headers(c, 3)
		clientFrames(t, flow, c.take())
		check("two streams, a connection window for one write", false)
		_ = c.fr.WriteWindowUpdate(0, 1<<30)
		clientFrames(t, flow, c.take())
		check("two streams, a large connection window", true)

		// The server sends 32 KiB on stream 1: its window is below a write.
		_ = s.fr.WriteData(1, false, make([]byte, 16<<10))
		_ = s.fr.WriteData(1, false, make([]byte, 16<<10))
		serverFrames(flow, s.take(), step)
		check("stream 1 used half its window", false)
		_ = c.fr.WriteWindowUpdate(1, 32<<10)
		clientFrames(t, flow, c.take())
		check("stream 1 granted it again", true)

		// A SETTINGS change moves every open stream's window.
		_ = c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
		clientFrames(t, flow, c.take())
		check("initial window 0", false)
		_ = c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
		clientFrames(t, flow, c.take())
		check("initial window 1 MiB", true)

		// A stream out of window, then ended by the server (END_STREAM),
		// then one reset by the client: neither holds the others back.
		_ = s.fr.WriteData(3, false, make([]byte, 1<<20-8<<10))
		serverFrames(flow, s.take(), step)
		check("stream 3 out of window", false)
		_ = s.fr.WriteData(3, true, nil)
		serverFrames(flow, s.take(), step)
		check("stream 3 ended by the server", true)
		headers(c, 5)
		_ = c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 10})
		clientFrames(t, flow, c.take())
		check("streams 1 and 5 with 1 KiB windows", false)
		_ = c.fr.WriteRSTStream(5, http2.ErrCodeCancel)
		_ = s.fr.WriteRSTStream(1, http2.ErrCodeInternal)
		serverFrames(flow, s.take(), step)
		clientFrames(t, flow, c.take())
		check("both reset", true)

		// The trailers of a stream the server ended do not open it again.
		headers(c, 1)
		clientFrames(t, flow, c.take())
		if n := len(flow.streams); n != 0 {
			t.Errorf("server writes of %d bytes: %d streams open after trailers of an ended one, want 0", step, n)
		}
	}
}

// Writes in progress count against the connection's window: two writers
// cannot both take the last room.
func TestSendFlowTakeCountsWritesInProgress(t *testing.T) {
	t.Parallel()
	flow := newSendFlow()
	c := newFrames()
	_ = c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	_ = c.fr.WriteWindowUpdate(0, 100<<10-defaultWindow) // 100 KiB: two writes of 32 KiB and their lag
	clientFrames(t, flow, c.take())
	if !flow.Take(32 << 10) {
		t.Fatal("Take refused the first write with room for two")
	}
	if !flow.Take(32 << 10) {
		t.Fatal("Take refused the second write with room for two")
	}
	if flow.Take(32 << 10) {
		t.Error("Take gave a third write room that two writes in progress took")
	}
	flow.Give(32 << 10)
	if !flow.Take(32 << 10) {
		t.Error("Take refused a write after one in progress gave its room back")
	}
}

// A connection whose client opens more streams than the ledger follows
// (none ended) is no longer followed: its writes go in pieces.
func TestSendFlowTooManyStreams(t *testing.T) {
	t.Parallel()
	flow := newSendFlow()
	c := newFrames()
	_ = c.fr.WriteWindowUpdate(0, 1<<30)
	for s := uint32(1); s <= 2*maxTrackedStreams+1; s += 2 {
		_ = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s, BlockFragment: []byte{0x82}, EndHeaders: true})
	}
	clientFrames(t, flow, c.take())
	if flow.Take(1) {
		t.Error("Take said yes on a connection with more streams than the ledger follows")
	}
	if n := len(flow.streams); n > maxTrackedStreams {
		t.Errorf("the ledger holds %d streams, more than %d", n, maxTrackedStreams)
	}
}

// Through a Server, a handler finds its connection's ledger, and a client
// reading at full speed leaves it room for whole writes.
func TestSendFlowOfServer(t *testing.T) {
	t.Parallel()
	took := make(chan bool, 1)
	addr := serveGuarded(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := SendFlowOf(r.Context())
		ok := f.Take(32 << 10)
		if ok {
			f.Give(32 << 10)
		}
		took <- ok
	}))
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: p}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !<-took {
		t.Error("a stream of a client with Go's default windows (4 MiB a stream) had no room for a 32 KiB write")
	}
	if SendFlowOf(t.Context()) != nil {
		t.Error("a context that did not come through Server has a ledger")
	}
}

// FuzzSendFlowServerBytes: whatever the server writes, and however its
// writes are cut, the ledger reads the same frames (the same windows,
// the same open streams) and never panics.
func FuzzSendFlowServerBytes(f *testing.F) {
	s := newFrames()
	_ = s.fr.WriteData(1, false, make([]byte, 100))
	_ = s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: []byte{0x88}, EndHeaders: true, EndStream: true})
	_ = s.fr.WriteRSTStream(5, http2.ErrCodeCancel)
	_ = s.fr.WriteData(1, true, []byte("end"))
	f.Add(s.take(), uint16(10), uint16(30))
	f.Add([]byte{0, 0, 1, 0, 1, 0, 0, 0, 1, 'x'}, uint16(4), uint16(9))
	f.Fuzz(func(t *testing.T, b []byte, cut1, cut2 uint16) {
		open := func() *SendFlow {
			fl := newSendFlow()
			fl.streams[1], fl.streams[3], fl.streams[5] = 70000, 5, defaultWindow
			return fl
		}
		whole, parts := open(), open()
		whole.serverBytes(b)
		i := min(int(cut1), len(b))
		j := min(max(int(cut2), i), len(b))
		parts.serverBytes(b[:i])
		parts.serverBytes(b[i:j])
		parts.serverBytes(b[j:])
		if whole.conn != parts.conn || whole.skip != parts.skip || whole.headN != parts.headN || len(whole.streams) != len(parts.streams) {
			t.Fatalf("cut at %d and %d: conn %d, skip %d, head %d, %d streams; whole: %d, %d, %d, %d", i, j,
				parts.conn, parts.skip, parts.headN, len(parts.streams), whole.conn, whole.skip, whole.headN, len(whole.streams))
		}
		for s, w := range whole.streams {
			if parts.streams[s] != w {
				t.Fatalf("cut at %d and %d: stream %d window %d, whole %d", i, j, s, parts.streams[s], w)
			}
		}
	})
}
