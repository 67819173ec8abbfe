package fleetapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"
)

// lister gathers the list of revisions from every replica, at most once
// a second whatever the number of asking clients (each dashboard stream
// asks every second): one gathering at a time (singleflight), its answer
// served again for listTTL. Safe for concurrent use.
type lister struct {
	o       APIOptions
	flights singleflight.Group

	mu   sync.Mutex // guards last; never held across I/O
	last *gathered
}

// gathered is one gathering's answer.
type gathered struct {
	at      time.Time
	list    []byte
	missing []string
}

func newLister(o APIOptions) *lister { return &lister{o: o} }

// listTTL is how long a gathered list is served again.
const listTTL = time.Second

// get returns the gathered list (a JSON array sorted by namespace and
// name) and the replicas that did not answer.
func (l *lister) get(ctx context.Context) ([]byte, []string) {
	l.mu.Lock()
	last := l.last
	l.mu.Unlock()
	if last != nil && time.Since(last.at) < listTTL {
		return last.list, last.missing
	}
	ch := l.flights.DoChan("list", func() (any, error) {
		// Not the first asker's context: the others wait for it too.
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listTimeout)
		defer cancel()
		list, missing := l.gather(gctx)
		g := &gathered{at: time.Now(), list: list, missing: missing}
		l.mu.Lock()
		l.last = g
		l.mu.Unlock()
		return g, nil
	})
	select {
	case r := <-ch:
		g := r.Val.(*gathered)
		return g.list, g.missing
	case <-ctx.Done():
		return []byte("[]"), []string{"this replica: " + ctx.Err().Error()}
	}
}

// entry is one revision of a list, kept as written.
type entry struct {
	key  [2]string
	data json.RawMessage
}

// gather asks this replica and every peer at once.
func (l *lister) gather(ctx context.Context) ([]byte, []string) {
	peers := l.o.Owners.Peers()
	lists := make([][]json.RawMessage, len(peers)+1)
	errs := make([]error, len(peers)+1)
	var wg sync.WaitGroup
	wg.Go(func() { lists[0], errs[0] = l.local() })
	for i, p := range peers {
		wg.Go(func() { lists[i+1], errs[i+1] = l.peer(ctx, p) })
	}
	wg.Wait()
	var missing []string
	seen := map[[2]string]bool{}
	var all []entry
	for i, items := range lists {
		if errs[i] != nil {
			who := "this replica"
			if i > 0 {
				who = peers[i-1]
			}
			missing = append(missing, who+": "+errs[i].Error())
			l.o.Logger.Warn("a replica's revisions are missing from the list", zap.String("replica", who), zap.Error(errs[i]))
			continue
		}
		for _, raw := range items {
			var k struct{ Namespace, Name string }
			if json.Unmarshal(raw, &k) != nil || seen[[2]string{k.Namespace, k.Name}] {
				continue // a revision changing hands is listed once
			}
			seen[[2]string{k.Namespace, k.Name}] = true
			all = append(all, entry{[2]string{k.Namespace, k.Name}, raw})
		}
	}
	slices.SortFunc(all, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.key[0], b.key[0]), cmp.Compare(a.key[1], b.key[1]))
	})
	out := make([]json.RawMessage, len(all))
	for i, e := range all {
		out[i] = e.data
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil { // never expected: every item is JSON a replica wrote
		return []byte("[]"), append(missing, "encoding the list: "+err.Error())
	}
	return data, missing
}

// local is this replica's own list, from its handler.
func (l *lister) local() ([]json.RawMessage, error) {
	req, err := http.NewRequest(http.MethodGet, "/revisions?scope="+LocalScope, nil)
	if err != nil {
		return nil, err
	}
	rec := &recorder{header: http.Header{}, code: http.StatusOK}
	l.o.Local.ServeHTTP(rec, req)
	return decodeList(rec.code, rec.body.Bytes())
}

// peer is one peer's own list.
func (l *lister) peer(ctx context.Context, admin string) ([]json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+"/revisions?scope="+LocalScope, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(ForwardedHeader, "1")
	resp, err := l.o.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxList))
	if err != nil {
		return nil, fmt.Errorf("reading its list: %w", err)
	}
	return decodeList(resp.StatusCode, body)
}

// maxList bounds one replica's list read (100,000 revisions are ~40 MB).
const maxList = 256 << 20

func decodeList(code int, body []byte) ([]json.RawMessage, error) {
	if code != http.StatusOK {
		return nil, fmt.Errorf("status %d: %.200s", code, body)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(body, &items); err != nil {
		return nil, fmt.Errorf("its list is not a JSON array: %w", err)
	}
	return items, nil
}

// recorder is an http.ResponseWriter that keeps what it is given; it
// flushes nothing (for in-process answers read whole).
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(code int)        { r.code = code }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
