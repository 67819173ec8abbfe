package ledger

import (
	"bytes"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Stream builds a client's HTTP/2 connection bytes: the preface, empty
// settings, then what frames writes.
func h2Stream(frames func(fr *http2.Framer, block func(fields ...string) []byte)) []byte {
	var b bytes.Buffer
	b.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&b, nil)
	_ = fr.WriteSettings()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	block := func(fields ...string) []byte {
		hb.Reset()
		for i := 0; i+1 < len(fields); i += 2 {
			_ = enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		return append([]byte(nil), hb.Bytes()...)
	}
	frames(fr, block)
	return b.Bytes()
}

// FuzzDifferentialH2 is FuzzDifferentialHTTP1's rule for HTTP/2 frame
// sequences: the same connection bytes to the reference server and
// through each route; every request the app sees behind a route is the
// one the reference saw, and a route delivers no more requests than the
// reference. A route may deliver fewer only where it refused (the header
// guard's 431, docs/activator.md); the seeds below have no such case.
func FuzzDifferentialH2(f *testing.F) {
	req := []string{":method", "POST", ":scheme", "http", ":authority", host, ":path", "/h2?x=1", "x-fuzz", "f"}
	f.Add(h2Stream(func(fr *http2.Framer, block func(...string) []byte) { // whole, with a body
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(req...), EndHeaders: true})
		_ = fr.WriteData(1, true, []byte("hello"))
	}))
	f.Add(h2Stream(func(fr *http2.Framer, block func(...string) []byte) { // CONTINUATION split, padding
		b := block(req...)
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:3], PadLength: 7})
		_ = fr.WriteContinuation(1, false, b[3:5])
		_ = fr.WriteContinuation(1, true, b[5:])
		_ = fr.WriteDataPadded(1, true, []byte("hello"), make([]byte, 4))
	}))
	f.Add(h2Stream(func(fr *http2.Framer, block func(...string) []byte) { // cut by RST_STREAM mid-body
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(req...), EndHeaders: true})
		_ = fr.WriteData(1, false, []byte("hel"))
		_ = fr.WriteRSTStream(1, http2.ErrCodeCancel)
	}))
	f.Add(h2Stream(func(fr *http2.Framer, block func(...string) []byte) { // cut by the connection's end mid-body
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(req...), EndHeaders: true})
		_ = fr.WriteData(1, false, []byte("hel"))
	}))
	f.Add(h2Stream(func(fr *http2.Framer, block func(...string) []byte) { // two streams, trailers
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(req...), EndHeaders: true})
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block(req...), EndHeaders: true})
		_ = fr.WriteData(3, true, []byte("b"))
		_ = fr.WriteData(1, false, []byte("a"))
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block("x-t", "1"), EndHeaders: true, EndStream: true})
	}))
	f.Fuzz(func(t *testing.T, stream []byte) {
		if len(stream) > 64<<10 {
			return
		}
		ref, refAddr := startRecorder(t)
		playH2(t, refAddr, stream)
		waitUntil(ref.settled)
		want := ref.take()
		for _, r := range routes {
			app, appAddr := startRecorder(t)
			d := front(t, r, appAddr)
			answers := playH2(t, d.addr, stream)
			waitUntil(app.settled)
			got := app.take()
			if diff := compareSeen(sortSeen(want), sortSeen(got), false); diff != "" {
				t.Errorf("%s: %s\nstream: %q\nreference saw: %+v\nthe app behind it saw: %+v\nanswers: %.300q",
					r, diff, stream, want, got, answers)
			}
		}
	})
}

// sortSeen orders requests by what they are: streams end in any order.
func sortSeen(s []seen) []seen {
	out := append([]seen(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && key(out[j]) < key(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func key(s seen) string { return s.Method + s.Path + s.Fuzz + s.Body }

// playH2 sends stream to addr and reads what comes back until the
// server has been quiet for 300 ms (an HTTP/2 server cancels its streams
// when the client's side ends, so the connection stays open meanwhile),
// at most 5 s; then it closes the connection.
func playH2(t *testing.T, addr string, stream []byte) []byte {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() { _, _ = conn.Write(stream) }()
	var out []byte
	buf := make([]byte, 16<<10)
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		n, err := conn.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if n == 0 {
				break
			}
		}
	}
	return out
}
