package statsclient

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"time"
)

// defaultTokenReload is how often the token file is read again: a
// projected ServiceAccount token is rotated by the kubelet at 80% of its
// lifetime (at least 10 minutes), so a minute is early enough and costs
// one small read a minute.
const defaultTokenReload = time.Minute

// tokenSource holds the bearer token sent with each POST: fixed, or read
// from a file and read again every reload and after a 401 (the file was
// rotated under us). The token is never logged. mu guards the cache.
type tokenSource struct {
	file   string
	reload time.Duration
	now    func() time.Time

	mu     sync.Mutex
	header []byte // "Bearer TOKEN"; nil: none
	readAt time.Time
}

func newTokenSource(o Options) *tokenSource {
	ts := &tokenSource{file: o.TokenFile, reload: o.TokenReload, now: o.Clock.Now}
	if o.TokenFile == "" && o.Token != "" {
		ts.header = []byte("Bearer " + o.Token)
	}
	return ts
}

// authorization returns the Authorization header's value, nil when there
// is no token to send.
func (ts *tokenSource) authorization() ([]byte, error) {
	if ts.file == "" {
		return ts.header, nil
	}
	now := ts.now()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.header != nil && now.Sub(ts.readAt) < ts.reload {
		return ts.header, nil
	}
	b, err := os.ReadFile(ts.file)
	if err != nil {
		return nil, fmt.Errorf("reading the stats token: %w", err) // the path is in err, the token never
	}
	tok := bytes.TrimSpace(b)
	if len(tok) == 0 {
		return nil, fmt.Errorf("reading the stats token: %s is empty", ts.file)
	}
	ts.header = append([]byte("Bearer "), tok...)
	ts.readAt = now
	return ts.header, nil
}

// expire makes the next authorization read the file again (after a 401).
func (ts *tokenSource) expire() {
	ts.mu.Lock()
	ts.header = nil
	ts.mu.Unlock()
}
