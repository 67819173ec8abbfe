//go:build k8s

package k8s

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// lowestReplicas records a Deployment's replica counts from a point on.
type lowestReplicas struct {
	mu   sync.Mutex
	seen []int32
}

func (l *lowestReplicas) lowest() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	low := int32(1 << 30)
	for _, n := range l.seen {
		low = min(low, n)
	}
	return low
}

func (l *lowestReplicas) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.seen)
}

// watchLowest polls the scale every 100ms until the test ends (a watch
// would do; polling also shows the value that held throughout).
func watchLowest(t *testing.T, ns, name string) *lowestReplicas {
	l := &lowestReplicas{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		last := int32(-1)
		for ctx.Err() == nil {
			if n, err := replicas(ctx, ns, name); err == nil && n != last {
				last = n
				l.mu.Lock()
				l.seen = append(l.seen, n)
				l.mu.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return l
}
