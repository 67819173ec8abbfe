package local

import (
	"context"
	"testing"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/autoscaler"
)

// TestPark: a parked revision is marked parked (its replicas untouched)
// and woken.
func TestPark(t *testing.T) {
	key := autoscaler.RevisionKey{Namespace: "default", Name: "hello"}
	p := &Platform{log: zap.NewNop(), revs: map[autoscaler.RevisionKey]*supervisor{}}
	p.revs[key] = newSupervisor(p, revSpec{key: key})
	p.revs[key].want = 1
	ctx := context.Background()
	if _, ok := p.ParkStatus(key); ok {
		t.Fatal("parked before Park")
	}
	if err := p.Park(ctx, key, autoscaler.ParkRequest{Parked: true, CPURequestMilli: 1}); err != nil {
		t.Fatal(err)
	}
	if st, ok := p.ParkStatus(key); !ok || st.State != autoscaler.ParkStateParked {
		t.Errorf("ParkStatus %+v, %v; want parked", st, ok)
	}
	if p.revs[key].want != 1 {
		t.Errorf("want %d after Park; the replica must keep running", p.revs[key].want)
	}
	if err := p.Park(ctx, key, autoscaler.ParkRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.ParkStatus(key); ok {
		t.Error("parked after the wake")
	}
	if err := p.Park(ctx, autoscaler.RevisionKey{Namespace: "default", Name: "nope"}, autoscaler.ParkRequest{Parked: true}); err == nil {
		t.Error("parked a revision that is not in the manifests")
	}
}

// TestScaleToZeroForgetsPark: a parked revision that goes to zero is no
// longer parked.
func TestScaleToZeroForgetsPark(t *testing.T) {
	key := autoscaler.RevisionKey{Namespace: "default", Name: "hello"}
	p := &Platform{log: zap.NewNop(), revs: map[autoscaler.RevisionKey]*supervisor{}}
	p.revs[key] = newSupervisor(p, revSpec{key: key})
	ctx := context.Background()
	if err := p.Park(ctx, key, autoscaler.ParkRequest{Parked: true, CPURequestMilli: 1}); err != nil {
		t.Fatal(err)
	}
	if err := p.Scale(ctx, key, 0); err != nil {
		t.Fatal(err)
	}
	if st, ok := p.ParkStatus(key); ok {
		t.Errorf("ParkStatus %+v after the scale to zero; want none", st)
	}
}
