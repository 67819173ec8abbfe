package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"ebb.dev/ebb/pkg/autoscaler"
)

// sameShardAs returns a revision name in default whose state shares
// hello's shard.
func sameShardAs(t *testing.T, k autoscaler.RevisionKey) string {
	t.Helper()
	for i := range 1000 {
		name := fmt.Sprint("rev-", i)
		if learnedShardOf(autoscaler.RevisionKey{Namespace: k.Namespace, Name: name}) == learnedShardOf(k) {
			return name
		}
	}
	t.Fatal("no name in hello's shard")
	return ""
}

func (h *harness) shard(t *testing.T, k autoscaler.RevisionKey) *corev1.ConfigMap {
	t.Helper()
	cm, err := h.client.CoreV1().ConfigMaps("ebb-system").Get(context.Background(),
		LearnedStatePrefix+fmt.Sprint(learnedShardOf(k)), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("shard of %s: %v", k, err)
	}
	return cm
}

// TestLearnedStatesRoundTrip: a batch is saved into the shards (created
// on first use, labelled), and the next leader's store loads it; a
// revision never saved loads nothing.
func TestLearnedStatesRoundTrip(t *testing.T) {
	other := sameShardAs(t, hello)
	h := start(t, Options{}, deployment("hello", 1, nil), deployment(other, 1, nil), deployment("third", 1, nil))
	eventually(t, "the Deployments are cached", func() bool { return len(h.p.inf.deploymentList()) == 3 })
	ctx := context.Background()
	third := autoscaler.RevisionKey{Namespace: "default", Name: "third"}
	otherKey := autoscaler.RevisionKey{Namespace: "default", Name: other}
	states := map[autoscaler.RevisionKey][]byte{hello: {'L', 1, 2}, otherKey: {'L', 9}, third: {0}}
	if err := h.p.LearnedStore().Save(ctx, states); err != nil {
		t.Fatal(err)
	}
	cm := h.shard(t, hello)
	if cm.Labels["app.kubernetes.io/component"] != LearnedStateComponent || cm.Labels[ManagedByLabel] != ManagedBy {
		t.Errorf("shard labels %v", cm.Labels)
	}
	if got := cm.Data["default.hello"]; got != "TAEC" {
		t.Errorf("hello's entry %q, want the base64 TAEC", got)
	}
	next := h.p.LearnedStore() // a new leader
	for k, want := range states {
		got, err := next.Load(ctx, k)
		if err != nil || !cmp.Equal(got, want) {
			t.Errorf("Load(%s) = %v, %v; want %v", k, got, err, want)
		}
	}
	if got, err := next.Load(ctx, autoscaler.RevisionKey{Namespace: "default", Name: "never"}); got != nil || err != nil {
		t.Errorf("a revision never saved: %v, %v; want nothing", got, err)
	}
}

// TestLearnedStatesPruneAndConflict: writing a shard drops the entries of
// revisions that are gone; a conflict (the shard changed since it was
// read, e.g. by the previous leader's last save) reads it again and
// merges.
func TestLearnedStatesPruneAndConflict(t *testing.T) {
	other := sameShardAs(t, hello)
	name := LearnedStatePrefix + fmt.Sprint(learnedShardOf(hello))
	var conflicts atomic.Int32
	h := startWith(t, Options{}, func(c *fake.Clientset) {
		scaleReactors(c, 0)
		c.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			if conflicts.Add(1) == 1 {
				return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, name, errors.New("the object has been modified"))
			}
			return false, nil, nil
		})
	}, deployment("hello", 1, nil), deployment(other, 1, nil),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ebb-system"},
			Data: map[string]string{"default.gone": "AAAA", "default." + other: "AQ=="}})
	eventually(t, "the Deployments are cached", func() bool { return len(h.p.inf.deploymentList()) == 2 })
	if err := h.p.LearnedStore().Save(context.Background(), map[autoscaler.RevisionKey][]byte{hello: {1}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"default.hello": "AQ==", "default." + other: "AQ=="}
	if diff := cmp.Diff(want, h.shard(t, hello).Data); diff != "" || conflicts.Load() != 2 {
		t.Errorf("shard after a conflict (-want +got):\n%s\n%d updates, want 2", diff, conflicts.Load())
	}
}

// TestLearnedStatesRefusals: an entry that is not base64 is an error of
// Load naming the ConfigMap and the key; a shard that cannot be read is
// an error of Load and Save, returned at once (without another read)
// for learnedReadRetry.
func TestLearnedStatesRefusals(t *testing.T) {
	name := LearnedStatePrefix + fmt.Sprint(learnedShardOf(hello))
	var forbid atomic.Bool
	h := startWith(t, Options{}, func(c *fake.Clientset) {
		scaleReactors(c, 0)
		c.PrependReactor("get", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if forbid.Load() && strings.HasPrefix(a.(k8stesting.GetAction).GetName(), LearnedStatePrefix) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, name, errors.New("RBAC"))
			}
			return false, nil, nil
		})
	}, deployment("hello", 1, nil),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ebb-system"}, Data: map[string]string{"default.hello": "%%"}})
	ctx := context.Background()
	if _, err := h.p.LearnedStore().Load(ctx, hello); err == nil || !strings.Contains(err.Error(), name+" key default.hello: not base64") {
		t.Errorf("Load of a bad entry: %v; want it to name the ConfigMap and the key", err)
	}
	forbid.Store(true)
	s := h.p.LearnedStore()
	var gets atomic.Int32
	for range 3 { // one read, then the error at once for learnedReadRetry
		if _, err := s.Load(ctx, hello); !apierrors.IsForbidden(err) {
			t.Errorf("Load with the shard forbidden: %v", err)
		}
	}
	for _, a := range h.client.Actions() {
		if g, ok := a.(k8stesting.GetAction); ok && a.GetResource().Resource == "configmaps" && g.GetName() == name {
			gets.Add(1)
		}
	}
	if gets.Load() != 2 { // the first store's read of the bad entry, and this one's
		t.Errorf("%d reads of the shard, want 2: a failed read is not retried within learnedReadRetry", gets.Load())
	}
	if err := s.Save(ctx, map[autoscaler.RevisionKey][]byte{hello: {1}}); !apierrors.IsForbidden(err) {
		t.Errorf("Save with the shard forbidden: %v", err)
	}
}

// TestLearnedStateShardBound: a shard never grows past maxShardBytes: the
// states that do not fit are left out.
func TestLearnedStateShardBound(t *testing.T) {
	s := &LearnedStates{exists: func(autoscaler.RevisionKey) bool { return true }, log: zap.NewNop()}
	batch := map[string][]byte{}
	for i := range 2000 {
		batch[fmt.Sprint("default.r", i)] = make([]byte, 600)
	}
	data := s.merged(nil, batch, 0)
	size := 0
	for k, v := range data {
		size += len(k) + len(v)
	}
	if size > maxShardBytes || len(data) == 0 || len(data) == len(batch) {
		t.Errorf("%d of %d entries in %d bytes: want some, not all, within %d", len(data), len(batch), size, maxShardBytes)
	}
}
