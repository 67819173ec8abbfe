package autoscaler

import (
	"context"
	"strings"
	"sync"
	"testing"
)

// reasonedPlatform records the reasons it is given.
type reasonedPlatform struct {
	*fakePlatform
	mu   sync.Mutex
	whys []ScaleReason
}

func (p *reasonedPlatform) ScaleWithReason(ctx context.Context, rev RevisionKey, n int32, why ScaleReason) error {
	p.mu.Lock()
	p.whys = append(p.whys, why)
	p.mu.Unlock()
	return p.Scale(ctx, rev, n)
}

func TestReasonedScalerGetsTheDecisionsReasons(t *testing.T) {
	fp := &fakePlatform{pods: map[RevisionKey][]Pod{}}
	p := &reasonedPlatform{fakePlatform: fp}
	s := &fakeScraper{}
	a := New(Options{Platform: p, Scraper: s})
	if err := a.Upsert(hello, map[string]string{"autoscaling.knative.dev/target": "10"}); err != nil {
		t.Fatal(err)
	}
	r := a.revisions[hello]
	fp.setPods(hello, 1)
	s.set(35, 100)
	for sec := t0; sec <= t0+4; sec++ {
		r.second(context.Background(), sec)
	}
	if len(p.whys) == 0 || len(p.whys) != len(fp.scales) {
		t.Fatalf("%d reasons for %d scales: every scale goes through ScaleWithReason", len(p.whys), len(fp.scales))
	}
	last := p.whys[len(p.whys)-1]
	if last.Code == "" || !strings.Contains(last.Message, "panic average") {
		t.Errorf("last reason %+v: want a code and the panic target's sentence", last)
	}
}
