package ledger

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"ebb.dev/ebb/pkg/proxy/h2c"
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

// h2Seeds are FuzzDifferentialH2's seeds, by name: one for each way an
// HTTP/2 request can be framed, split or cut. They live as files in
// testdata/fuzz/FuzzDifferentialH2 (go test runs them, go test -fuzz
// mutates them); TestH2Corpus keeps the files equal to this list.
func h2Seeds() map[string][]byte {
	req := []string{":method", "POST", ":scheme", "http", ":authority", host, ":path", "/h2?x=1", "x-fuzz", "f"}
	get := []string{":method", "GET", ":scheme", "http", ":authority", host, ":path", "/g", "x-fuzz", "g"}
	type frames = func(fr *http2.Framer, block func(...string) []byte)
	seeds := map[string]frames{
		"whole": func(fr *http2.Framer, block func(...string) []byte) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(req...), EndHeaders: true})
			_ = fr.WriteData(1, true, []byte("hello"))
		},
		"get-end-stream-on-headers": func(fr *http2.Framer, block func(...string) []byte) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(get...), EndHeaders: true, EndStream: true})
		},
		"continuation-split-padded": func(fr *http2.Framer, block func(...string) []byte) {
			b := block(req...)
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:3], PadLength: 7})
			_ = fr.WriteContinuation(1, false, b[3:5])
			_ = fr.WriteContinuation(1, true, b[5:])
			_ = fr.WriteDataPadded(1, true, []byte("hello"), make([]byte, 4))
		},
		"continuation-many-pieces": func(fr *http2.Framer, block func(...string) []byte) {
			// 4 KiB of fields (under the guard's limit) in 100-byte pieces.
			b := block(append(append([]string(nil), req...), "x-big", strings.Repeat("v", 4096))...)
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:100]})
			for i := 100; i < len(b); i += 100 {
				_ = fr.WriteContinuation(1, i+100 >= len(b), b[i:min(i+100, len(b))])
			}
			_ = fr.WriteData(1, true, []byte("big"))
		},
		"continuation-empty-frames": func(fr *http2.Framer, block func(...string) []byte) {
			// Empty CONTINUATION frames inside a block: past the hops'
			// bound on a block's frames, the header guard refuses the block
			// (the stream fails, the connection ends gracefully); the
			// reference serves it.
			b := block(req...)
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:4]})
			for range 64 {
				_ = fr.WriteContinuation(1, false, nil)
			}
			_ = fr.WriteContinuation(1, true, b[4:])
			_ = fr.WriteData(1, true, []byte("empty"))
		},
		"hpack-table-size-update": func(fr *http2.Framer, block func(...string) []byte) {
			// A size update to 0 (the table emptied) and back to 4096 at the
			// start of a block, then literals with indexing, reused by index
			// in the second stream's block.
			b := append([]byte{0x20, 0x3f, 0xe1, 0x1f}, block(req...)...)
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b, EndHeaders: true})
			_ = fr.WriteData(1, true, []byte("one"))
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block(req...), EndHeaders: true})
			_ = fr.WriteData(3, true, []byte("two"))
		},
		"hpack-table-size-zero": func(fr *http2.Framer, block func(...string) []byte) {
			// The table kept at 0: every literal with indexing is evicted at
			// once, so nothing may be reused.
			b := append([]byte{0x20}, block(req...)...)
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b, EndHeaders: true})
			_ = fr.WriteData(1, true, []byte("zero"))
		},
		"hpack-update-after-field": func(fr *http2.Framer, block func(...string) []byte) {
			// A size update after a field: a COMPRESSION_ERROR for the whole
			// connection (RFC 7541 §4.2); no request may reach the app.
			b := append(block(req...), 0x20)
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b, EndHeaders: true})
			_ = fr.WriteData(1, true, []byte("bad"))
		},
		"cookie-crumbs": func(fr *http2.Framer, block func(...string) []byte) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndHeaders: true,
				BlockFragment: block(append(append([]string(nil), req...), "cookie", "a=1", "cookie", "b=2", "x-dup", "1", "x-dup", "2")...)})
			_ = fr.WriteData(1, true, []byte("c"))
		},
		"two-content-types": func(fr *http2.Framer, block func(...string) []byte) {
			// content-type twice: the hops refuse the stream (400), as
			// their HTTP/1.1 servers refuse the request; the reference
			// serves it with both values. The next stream is served by all.
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndHeaders: true,
				BlockFragment: block(append(append([]string(nil), req...), "content-type", "text/a", "content-type", "text/b")...)})
			_ = fr.WriteData(1, true, []byte("ct"))
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block(get...), EndHeaders: true, EndStream: true})
		},
		"non-ascii-authority": func(fr *http2.Framer, block func(...string) []byte) {
			// An :authority with a byte that is not ASCII: the reference
			// serves it as sent, Go's HTTP/2 client would write it to the
			// app as punycode; the hops refuse the stream (400), as
			// net/http's HTTP/1.1 server refuses such a Host. The next
			// stream is served by all.
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndHeaders: true, EndStream: true,
				BlockFragment: block(":method", "GET", ":scheme", "http", ":authority", "ledg9\xab2o5st", ":path", "/g", "x-fuzz", "a")})
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block(get...), EndHeaders: true, EndStream: true})
		},
		"zero-length-data-end-stream": func(fr *http2.Framer, block func(...string) []byte) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(req...), EndHeaders: true})
			_ = fr.WriteData(1, false, []byte("hel"))
			_ = fr.WriteData(1, false, nil)
			_ = fr.WriteData(1, false, nil)
			_ = fr.WriteData(1, true, nil)
		},
		"padded-data-only-padding": func(fr *http2.Framer, block func(...string) []byte) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(req...), EndHeaders: true})
			_ = fr.WriteDataPadded(1, false, nil, make([]byte, 200))
			_ = fr.WriteDataPadded(1, true, []byte("x"), make([]byte, 255))
		},
		"window-update-edges": func(fr *http2.Framer, block func(...string) []byte) {
			// The connection's window raised to its maximum, a stream's
			// before its HEADERS (a PROTOCOL_ERROR on an idle stream ends
			// the connection: nothing reaches the app).
			_ = fr.WriteWindowUpdate(0, 1<<31-1-65535)
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(req...), EndHeaders: true})
			_ = fr.WriteWindowUpdate(1, 1<<20)
			_ = fr.WriteData(1, true, []byte("w"))
		},
		"window-update-zero": func(fr *http2.Framer, block func(...string) []byte) {
			// An increment of 0 on an open stream: that stream is reset
			// (RFC 9113 §6.9), the next one is served.
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(req...), EndHeaders: true})
			_ = fr.WriteWindowUpdate(1, 0)
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block(get...), EndHeaders: true, EndStream: true})
		},
		"rst-mid-body": func(fr *http2.Framer, block func(...string) []byte) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(req...), EndHeaders: true})
			_ = fr.WriteData(1, false, []byte("hel"))
			_ = fr.WriteRSTStream(1, http2.ErrCodeCancel)
		},
		"connection-end-mid-body": func(fr *http2.Framer, block func(...string) []byte) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(req...), EndHeaders: true})
			_ = fr.WriteData(1, false, []byte("hel"))
		},
		"two-streams-trailers": func(fr *http2.Framer, block func(...string) []byte) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(req...), EndHeaders: true})
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block(req...), EndHeaders: true})
			_ = fr.WriteData(3, true, []byte("b"))
			_ = fr.WriteData(1, false, []byte("a"))
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block("x-t", "1"), EndHeaders: true, EndStream: true})
		},
		"repeat-empty-data": func(fr *http2.Framer, block func(...string) []byte) {
			// The fuzzer's repeat frame (expandRepeats): three empty DATA
			// frames sent as one, so a mutation can make any frame many.
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(req...), EndHeaders: true})
			var inner bytes.Buffer
			_ = http2.NewFramer(&inner, nil).WriteData(1, false, nil)
			_ = fr.WriteRawFrame(repeatFrameType, 0, 0, append([]byte{0, 3}, inner.Bytes()...))
			_ = fr.WriteData(1, true, []byte("r"))
		},
		"content-length-mismatch": func(fr *http2.Framer, block func(...string) []byte) {
			// content-length says 10, the stream ends after 5: malformed
			// (RFC 9113 §8.1.1), the app must not see a whole body.
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndHeaders: true,
				BlockFragment: block(append(append([]string(nil), req...), "content-length", "10")...)})
			_ = fr.WriteData(1, true, []byte("hello"))
		},
	}
	out := make(map[string][]byte, len(seeds))
	for name, f := range seeds {
		out[name] = h2Stream(f)
	}
	// Inputs that are not a client's preface and frames, found by the
	// fuzzer.
	out["pri-http10-not-a-preface"] = []byte("PRI * HTTP/1.0\n\n")
	// A HEADERS frame without END_STREAM whose content-length is not a
	// number ("1\xab"), and no DATA: the hops answer it 400
	// (h2c.ContentLengthError); the app behind them got it with an empty
	// body that ended cleanly.
	out["malformed-content-length"] = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00#\x01\x04\x00 \x00\x01" +
		"\x83\x86A\x8a\xa0\xb2L[\x17\x90\xb2\x8e\xda\x13E\x86bq\x7f\x9e`\x0f@\x85\xf2\xb4\xb6\xfb\xf7\x01f\\\x021\xab")
	return out
}

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz/FuzzDifferentialH2 from h2Seeds")

// TestH2Corpus: the seed files are exactly h2Seeds (go test -run
// TestH2Corpus ./test/ledger -args -update-corpus rewrites them).
func TestH2Corpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDifferentialH2")
	seeds := h2Seeds()
	if *updateCorpus {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range seeds {
			if err := os.WriteFile(filepath.Join(dir, name), corpusFile(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(seeds) {
		t.Errorf("%d files in %s, %d seeds in h2Seeds: run go test -run TestH2Corpus ./test/ledger -args -update-corpus", len(files), dir, len(seeds))
	}
	for name, b := range seeds {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, corpusFile(b)) {
			t.Errorf("seed %s: its file is missing or differs (%v): run go test -run TestH2Corpus ./test/ledger -args -update-corpus", name, err)
		}
	}
}

// corpusFile is a one-argument seed in go test's corpus format.
func corpusFile(b []byte) []byte { return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b) }

// FuzzDifferentialH2 is FuzzDifferentialHTTP1's rule for HTTP/2 frame
// sequences: the same connection bytes to the reference server and
// through each route; every request the app sees behind a route is the
// one the reference saw, and a route delivers no more requests than the
// reference. A route may deliver fewer only where the client saw a
// refusal (h2Refused): the header guard's, docs/activator.md; or where
// the client cut its connection mid-frame (played.cut): then no stream
// of it can be answered, and a hop that had not yet sent on a request it
// had read whole (the reference's handler starts at once) ran less.
//
// Besides the rig's resource oracles, one of the header guard's: the most
// it held of one header block (h2c.TakeHeldMost) stays within its bound.
// And an input may carry repeat frames (expandRepeats): a frame sent many
// times is one mutation away, so a bound on frames or bytes of one kind
// can be crossed within the input size.
func FuzzDifferentialH2(f *testing.F) {
	for _, s := range progSeedsH2 {
		f.Add(s)
	}
	g := newRig(f)
	_ = h2c.TakeHeldMost() // what the rig's start held
	f.Fuzz(func(t *testing.T, stream []byte) {
		if len(stream) > 64<<10 {
			return
		}
		if len(stream) > 0 && stream[0] == progMode {
			stream = programH2(stream[1:])
		} else {
			stream = expandRepeats(stream)
		}
		g.input(t, stream, playH2, h2Refused, sortSeen)
		if most := h2c.TakeHeldMost(); most > rigHeldMost {
			t.Errorf("a header guard held %d bytes of one header block, more than its bound (%d, docs/activator.md)\nstream: %s",
				most, rigHeldMost, short(stream))
		}
	})
}

// rigHeldMost is what a header guard may hold of one block in the proxies
// (blockMax: 17 KiB for their 8 KiB of fields), with room.
const rigHeldMost = 24 << 10

// repeatFrameType is the fuzzer's own frame type (unknown to HTTP/2): its
// payload is a count (2 bytes, big-endian) and a frame, which
// expandRepeats sends count times in its place.
const repeatFrameType = 0xeb

// maxExpanded bounds an input with its repeats expanded: room for 14,000
// empty frames, past every bound on frames of one kind (64 for a header
// block, 24 KiB held), and quick enough to play through the three routes
// within playH2's 5 s on a loaded machine (1 MiB was not: a body of 130,000
// empty DATA frames was still on its way when the client gave up).
const maxExpanded = 128 << 10

// expandRepeats replaces each repeat frame of a stream of whole frames by
// its frame, count times (at most maxExpanded bytes in all); any other
// stream is sent as it is.
func expandRepeats(stream []byte) []byte {
	if !wholeFrames(stream) || !bytes.Contains(stream, []byte{repeatFrameType}) {
		return stream
	}
	b, _ := bytes.CutPrefix(stream, []byte(http2.ClientPreface))
	out := []byte(http2.ClientPreface)
	for len(b) > 0 {
		n := 9 + (int(b[0])<<16 | int(b[1])<<8 | int(b[2]))
		frame := b[:n]
		b = b[n:]
		if frame[3] != repeatFrameType || n < 9+2 {
			out = append(out, frame...)
			continue
		}
		count, inner := int(frame[9])<<8|int(frame[10]), frame[11:]
		for range count {
			if len(out)+len(inner) > maxExpanded {
				break
			}
			out = append(out, inner...)
		}
	}
	return out
}

// h2Refused reports whether the frames a server sent hold a refusal the
// client sees: a GOAWAY with an error code (the connection was refused), a
// RST_STREAM (that stream failed: the header guard's refusal of a block of
// frames without progress ends so, docs/activator.md), or an answer with an
// error status (the guard's 431). A server that closed the connection
// without a byte refused it too: an HTTP/2 server's first frame is its
// SETTINGS, so nothing was taken (a hop reads "PRI * HTTP/1.0" as a
// preface gone wrong; net/http serves it as an HTTP/1.0 request for *,
// whose asterisk form the hops refuse anyway). A raw input that is no
// preface at all may be an HTTP/1.x request, which a hop answers in
// HTTP/1.1: an error status or a close there is a refusal too (refused).
func h2Refused(answers []byte) bool {
	if len(answers) == 0 {
		return true
	}
	if bytes.HasPrefix(answers, []byte("HTTP/1.")) {
		return refused(answers) // an HTTP/1.x stream (a raw input without a preface) refused by a hop
	}
	fr := http2.NewFramer(nil, bytes.NewReader(answers))
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return false
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			if f.ErrCode != http2.ErrCodeNo {
				return true
			}
		case *http2.RSTStreamFrame:
			return true
		case *http2.MetaHeadersFrame:
			if st := f.PseudoValue("status"); len(st) == 3 && (st[0] == '4' || st[0] == '5') {
				return true
			}
		}
	}
}

// short is v as %+v, cut to 600 bytes (a seed can be 64 KiB).
func short(v any) string {
	s := fmt.Sprintf("%+v", v)
	if len(s) > 600 {
		return fmt.Sprintf("%.600q... (%d bytes)", s, len(s))
	}
	return s
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

func key(s seen) string { return s.Method + s.Path + s.Host + s.Fields + s.Body }

// playPing ends every HTTP/2 input: a server answers a PING once it has
// read every frame before it, so its ACK says the input was read whole.
var playPing = [8]byte{'e', 'b', 'b', '-', 'f', 'u', 'z', 'z'}

// playH2 sends stream to addr and reads what comes back. A stream of whole
// frames gets a PING after it, and is read until the PING's ACK (the
// server has read every frame) and then, on an input's first play, until
// every stream the client ended has ended from the server's side too (an
// answer's END_STREAM or a RST_STREAM) or a GOAWAY came, and not for the
// ACK at all after a GOAWAY with an error (the server is done with the
// connection, and may keep it open a second for the client to close it,
// net/http's GOAWAY timeout: the 300 ms of quiet were spent); on its replay
// (slow), or where a stream the client ended gets no end, until the server
// has been quiet for 30 ms (an HTTP/2 server keeps the connection open
// when the client stops sending; its streams go on). A stream that is not
// whole frames (cut mid-frame, or no preface) ends with the client's side
// closed, as a client that dies mid-frame, and is read until the server
// closes or has been quiet for 300 ms (20 ms on a first play: the servers,
// the reference too, mostly keep such a connection open, and this wait was
// most of the fuzzer's time once whole-frame inputs took milliseconds). At
// most 5 s; then it closes the connection.
//
// Waiting for the ends instead of 30 ms of quiet is what lets an input
// take a few milliseconds: the quiet was most of an input's time. A first
// play cut short (a refusal not yet read) only differs, and the rig plays
// the input again, slowly, before it reports anything.
func playH2(t testing.TB, addr string, stream []byte, slow bool) played {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	whole := wholeFrames(stream)
	var ended map[uint32]bool
	if whole {
		var ping bytes.Buffer
		_ = http2.NewFramer(&ping, nil).WritePing(false, playPing)
		go func() { _, _ = conn.Write(append(append([]byte(nil), stream...), ping.Bytes()...)) }()
		if !slow {
			ended = clientEnded(stream)
		}
	} else {
		go func() {
			_, _ = conn.Write(stream)
			_ = conn.(*net.TCPConn).CloseWrite()
		}()
	}
	var out []byte
	buf := make([]byte, 16<<10)
	quiet, acked := 300*time.Millisecond, false
	if !whole && !slow {
		quiet = 20 * time.Millisecond
	}
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		_ = conn.SetReadDeadline(time.Now().Add(quiet))
		n, err := conn.Read(buf)
		out = append(out, buf[:n]...)
		if !acked && whole && pingAcked(out) {
			acked, quiet = true, 30*time.Millisecond
		}
		if ended != nil && (acked && serverEnded(out, ended) || goneAway(out)) {
			break
		}
		if err != nil && (!errors.Is(err, os.ErrDeadlineExceeded) || n == 0) {
			break
		}
	}
	return played{answers: out, cut: !whole && bytes.HasPrefix(stream, []byte(http2.ClientPreface))}
}

// clientEnded lists the streams a client's whole frames end (HEADERS or
// DATA with END_STREAM) and do not reset.
func clientEnded(stream []byte) map[uint32]bool {
	ended := map[uint32]bool{}
	eachFrame(stream[len(http2.ClientPreface):], func(typ http2.FrameType, flags http2.Flags, id uint32) bool {
		switch {
		case (typ == http2.FrameHeaders || typ == http2.FrameData) && flags.Has(http2.FlagDataEndStream):
			ended[id] = true
		case typ == http2.FrameRSTStream:
			delete(ended, id)
		}
		return true
	})
	return ended
}

// serverEnded reports whether a server's frames so far end every stream
// of ended (HEADERS or DATA with END_STREAM, RST_STREAM), or hold a GOAWAY
// (the streams it did not take never will be).
func serverEnded(answers []byte, ended map[uint32]bool) bool {
	left := len(ended)
	seen := map[uint32]bool{}
	goaway := false
	eachFrame(answers, func(typ http2.FrameType, flags http2.Flags, id uint32) bool {
		switch {
		case typ == http2.FrameGoAway:
			goaway = true
			return false
		case ended[id] && !seen[id] && (typ == http2.FrameRSTStream ||
			(typ == http2.FrameHeaders || typ == http2.FrameData) && flags.Has(http2.FlagDataEndStream)):
			seen[id] = true
			left--
		}
		return true
	})
	return goaway || left == 0
}

// goneAway reports whether a server's frames so far hold a GOAWAY with an
// error code.
func goneAway(answers []byte) bool {
	gone := false
	eachFrame(answers, func(typ http2.FrameType, _ http2.Flags, _ uint32) bool {
		gone = typ == http2.FrameGoAway
		return !gone
	})
	if !gone {
		return false
	}
	fr := http2.NewFramer(nil, bytes.NewReader(answers))
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return false
		}
		if g, ok := f.(*http2.GoAwayFrame); ok && g.ErrCode != http2.ErrCodeNo {
			return true
		}
	}
}

// eachFrame calls f with the type, flags and stream of each whole frame
// of b, until f returns false.
func eachFrame(b []byte, f func(http2.FrameType, http2.Flags, uint32) bool) {
	for len(b) >= 9 {
		n := 9 + (int(b[0])<<16 | int(b[1])<<8 | int(b[2]))
		if len(b) < n {
			return
		}
		id := (uint32(b[5])<<24 | uint32(b[6])<<16 | uint32(b[7])<<8 | uint32(b[8])) & (1<<31 - 1)
		if !f(http2.FrameType(b[3]), http2.Flags(b[4]), id) {
			return
		}
		b = b[n:]
	}
}

// wholeFrames reports whether stream is the client preface and whole
// frames.
func wholeFrames(stream []byte) bool {
	b, ok := bytes.CutPrefix(stream, []byte(http2.ClientPreface))
	for ok && len(b) > 0 {
		if len(b) < 9 {
			return false
		}
		n := 9 + (int(b[0])<<16 | int(b[1])<<8 | int(b[2]))
		if len(b) < n {
			return false
		}
		b = b[n:]
	}
	return ok
}

// pingAcked reports whether the server's frames so far hold the ACK of
// playPing.
func pingAcked(answers []byte) bool {
	fr := http2.NewFramer(nil, bytes.NewReader(answers))
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return false
		}
		if p, ok := f.(*http2.PingFrame); ok && p.IsAck() && p.Data == playPing {
			return true
		}
	}
}
