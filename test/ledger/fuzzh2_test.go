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
		"content-length-mismatch": func(fr *http2.Framer, block func(...string) []byte) {
			// content-length says 10, the stream ends after 5: malformed
			// (RFC 9113 §8.1.1), the app must not see a whole body.
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndHeaders: true,
				BlockFragment: block(append(append([]string(nil), req...), "content-length", "10")...)})
			_ = fr.WriteData(1, true, []byte("hello"))
		},
	}
	out := make(map[string][]byte, len(seeds)+1)
	for name, f := range seeds {
		out[name] = h2Stream(f)
	}
	// Found by the fuzzer: the reference serves it as an HTTP/1.0 request
	// with the method PRI, the proxies give it to their HTTP/2 server
	// (compareSeen leaves PRI requests out).
	out["pri-http10-bare-lf"] = []byte("PRI * HTTP/1.0\n\n")
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
// refusal (h2Refused): the header guard's, docs/activator.md.
func FuzzDifferentialH2(f *testing.F) {
	rig := newFuzzRig(f)
	f.Fuzz(func(t *testing.T, stream []byte) {
		if len(stream) > 64<<10 {
			return
		}
		want, got, answers := rig.run(t, stream, playH2)
		for i, r := range routes {
			if diff := compareSeen(sortSeen(want), sortSeen(got[i]), h2Refused(answers[i])); diff != "" {
				t.Errorf("%s: %s\nstream: %s\nreference saw: %s\nthe app behind it saw: %s\nanswers: %.300q",
					r, diff, short(stream), short(want), short(got[i]), answers[i])
			}
		}
		rig.checkResources(t)
	})
}

// h2Refused reports whether the frames a server sent hold a refusal the
// client sees: a GOAWAY with an error code (the connection was refused), a
// RST_STREAM (that stream failed: the header guard's refusal of a block of
// frames without progress ends so, docs/activator.md), or an answer with an
// error status (the guard's 431).
func h2Refused(answers []byte) bool {
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

// playH2 sends stream to addr and reads what comes back until the
// server has been quiet for h2Quiet (an HTTP/2 server cancels its streams
// when the client's side ends, so the connection stays open meanwhile),
// at most 5 s; then it closes the connection.
// h2Quiet ends a play: the proxies and the apps run on 127.0.0.1 and
// answer within milliseconds; the guard's own refusals are immediate
// (a header block's timeout is the only later one, and no play waits
// for it). While fuzzing it is 100 ms, which bounds the HTTP/2 fuzzer's
// rate (about 10 inputs a second per worker); the seeds of make test,
// on a machine that may be busy, get 300 ms.
func h2Quiet() time.Duration {
	if fuzzing() {
		return 100 * time.Millisecond
	}
	return 300 * time.Millisecond
}

// fuzzing reports whether go test runs with -fuzz (not only the seeds).
func fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

func playH2(addr string, stream []byte) ([]byte, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	go func() { _, _ = conn.Write(stream) }()
	var out []byte
	buf := make([]byte, 16<<10)
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		_ = conn.SetReadDeadline(time.Now().Add(h2Quiet()))
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
	return out, nil
}
