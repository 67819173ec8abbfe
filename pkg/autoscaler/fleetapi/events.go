package fleetapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// serveEvents answers the dashboard's stream (GET /events?revision=NS/NAME):
// the stream of the replica that decides for the selected revision (its
// chart and decisions), each update's list of revisions replaced by every
// replica's. Without a selected revision, this replica's stream.
func (a *api) serveEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	admin, self := "", true
	if rev := r.URL.Query().Get("revision"); rev != "" {
		if ns, name, found := strings.Cut(rev, "/"); found {
			var known bool
			if admin, self, known = a.owner(ns, name); !known {
				changing(w, rev)
				return
			}
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	up, code, err := a.upstream(ctx, r, admin, self)
	if err != nil {
		http.Error(w, fmt.Sprintf("the dashboard's stream from the replica at %s: %v", admin, err), http.StatusBadGateway)
		return
	}
	defer up.Close()
	if code != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(up, 4096))
		http.Error(w, strings.TrimSpace(string(body)), code)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{}) // the stream reads nothing after its head
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	a.relay(ctx, w, flusher, rc, up)
}

// eventWriteTimeout bounds the write of one update to the dashboard.
const eventWriteTimeout = 10 * time.Second

// relay copies the stream event by event, each update's revisions
// replaced by the gathered list.
func (a *api) relay(ctx context.Context, w io.Writer, f http.Flusher, rc *http.ResponseController, up io.Reader) {
	br := bufio.NewReaderSize(up, 64<<10)
	var event bytes.Buffer
	for {
		line, err := br.ReadBytes('\n')
		event.Write(line)
		if err != nil {
			return // the upstream stream ended: the dashboard reconnects
		}
		if len(bytes.TrimRight(line, "\r\n")) != 0 {
			continue
		}
		out := a.withFleetList(ctx, event.Bytes())
		event.Reset()
		_ = rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout)) // a socket deadline: wall time
		if _, err := w.Write(out); err != nil {
			return
		}
		f.Flush()
	}
}

// withFleetList rewrites an update event's data: its revisions are every
// replica's. Any other event, or data that is not an update, is kept.
func (a *api) withFleetList(ctx context.Context, event []byte) []byte {
	const dataPrefix = "data: "
	lines := bytes.Split(event, []byte("\n"))
	for i, l := range lines {
		data, ok := bytes.CutPrefix(l, []byte(dataPrefix))
		if !ok {
			continue
		}
		var u map[string]json.RawMessage
		if json.Unmarshal(data, &u) != nil {
			return event
		}
		if _, ok := u["revisions"]; !ok {
			return event
		}
		list, _ := a.lists.get(ctx)
		u["revisions"] = list
		out, err := json.Marshal(u)
		if err != nil {
			return event
		}
		lines[i] = append([]byte(dataPrefix), out...)
		return bytes.Join(lines, []byte("\n"))
	}
	return event
}

// upstream opens the stream of the replica that decides: a peer's over
// HTTP, or this one's through its handler, in process.
func (a *api) upstream(ctx context.Context, r *http.Request, admin string, self bool) (io.ReadCloser, int, error) {
	if self {
		return a.localStream(ctx, r)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+"/events?"+r.URL.RawQuery, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set(ForwardedHeader, "1")
	resp, err := a.o.Client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	return resp.Body, resp.StatusCode, nil
}

// localStream runs this replica's stream handler into a pipe until ctx
// ends, and returns once it has answered its status.
func (a *api) localStream(ctx context.Context, r *http.Request) (io.ReadCloser, int, error) {
	pr, pw := io.Pipe()
	pipe := &pipeWriter{header: http.Header{}, w: pw, head: make(chan int, 1)}
	go func() {
		a.o.Local.ServeHTTP(pipe, r.Clone(ctx))
		pipe.answer(http.StatusOK) // a handler that wrote nothing
		pw.Close()
	}()
	select {
	case code := <-pipe.head:
		return pr, code, nil
	case <-ctx.Done():
		pr.Close()
		return nil, 0, ctx.Err()
	}
}

// pipeWriter is the http.ResponseWriter of an in-process stream: its
// status goes to head (once), what is written to the pipe; Flush is a
// no-op (the pipe has no buffer).
type pipeWriter struct {
	header http.Header
	w      *io.PipeWriter
	head   chan int
	once   sync.Once
}

func (p *pipeWriter) answer(code int) { p.once.Do(func() { p.head <- code }) }

func (p *pipeWriter) Header() http.Header  { return p.header }
func (p *pipeWriter) WriteHeader(code int) { p.answer(code) }
func (p *pipeWriter) Flush()               {}

func (p *pipeWriter) Write(b []byte) (int, error) {
	p.answer(http.StatusOK)
	return p.w.Write(b)
}
