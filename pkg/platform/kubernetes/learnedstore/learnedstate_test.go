package learnedstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/fence"
)

var hello = autoscaler.RevisionKey{Namespace: "default", Name: "hello"}

// harness is a fake cluster whose opted-in revisions are named.
type harness struct {
	client *fake.Clientset
	optIn  map[autoscaler.RevisionKey]bool
}

// start makes a fake cluster holding objs, with reactors added first, and
// the revisions of names in default opted in.
func start(reactors func(*fake.Clientset), names []string, objs ...runtime.Object) *harness {
	h := &harness{client: fake.NewClientset(objs...), optIn: map[autoscaler.RevisionKey]bool{}}
	if reactors != nil {
		reactors(h.client)
	}
	for _, n := range names {
		h.optIn[autoscaler.RevisionKey{Namespace: "default", Name: n}] = true
	}
	return h
}

// store is a new store on the harness: a new replica's.
func (h *harness) store() *Store {
	return New(Options{Client: h.client, Namespace: config.SystemNamespace, Exists: func(k autoscaler.RevisionKey) bool { return h.optIn[k] }})
}

// sameShardAs returns a revision name in default whose state shares
// hello's shard.
func sameShardAs(t *testing.T, k autoscaler.RevisionKey) string {
	t.Helper()
	for i := range 1000 {
		name := fmt.Sprint("rev-", i)
		if shardOf(autoscaler.RevisionKey{Namespace: k.Namespace, Name: name}) == shardOf(k) {
			return name
		}
	}
	t.Fatal("no name in hello's shard")
	return ""
}

func (h *harness) shard(t *testing.T, k autoscaler.RevisionKey) *corev1.ConfigMap {
	t.Helper()
	cm, err := h.client.CoreV1().ConfigMaps(config.SystemNamespace).Get(context.Background(), Name(k), metav1.GetOptions{})
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
	h := start(nil, []string{"hello", other, "third"})
	ctx := context.Background()
	third := autoscaler.RevisionKey{Namespace: "default", Name: "third"}
	otherKey := autoscaler.RevisionKey{Namespace: "default", Name: other}
	states := map[autoscaler.RevisionKey][]byte{hello: {'L', 1, 2}, otherKey: {'L', 9}, third: {0}}
	if err := h.store().Save(ctx, states); err != nil {
		t.Fatal(err)
	}
	cm := h.shard(t, hello)
	if cm.Labels[config.ComponentLabel] != component || cm.Labels[config.ManagedByLabel] != config.ManagedBy {
		t.Errorf("shard labels %v", cm.Labels)
	}
	if got := cm.Data["default.hello"]; got != "TAEC" {
		t.Errorf("hello's entry %q, want the base64 TAEC", got)
	}
	next := h.store() // a new leader
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
	name := Name(hello)
	var conflicts atomic.Int32
	h := start(func(c *fake.Clientset) {
		c.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			if conflicts.Add(1) == 1 {
				return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, name, errors.New("the object has been modified"))
			}
			return false, nil, nil
		})
	}, []string{"hello", other},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: config.SystemNamespace},
			Data: map[string]string{"default.gone": "AAAA", "default." + other: "AQ=="}})
	if err := h.store().Save(context.Background(), map[autoscaler.RevisionKey][]byte{hello: {1}}); err != nil {
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
	name := Name(hello)
	var forbid atomic.Bool
	h := start(func(c *fake.Clientset) {
		c.PrependReactor("get", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if forbid.Load() && strings.HasPrefix(a.(k8stesting.GetAction).GetName(), config.LearnedStatePrefix) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, name, errors.New("RBAC"))
			}
			return false, nil, nil
		})
	}, []string{"hello"},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: config.SystemNamespace}, Data: map[string]string{"default.hello": "%%"}})
	ctx := context.Background()
	if _, err := h.store().Load(ctx, hello); err == nil || !strings.Contains(err.Error(), name+" key default.hello: not base64") {
		t.Errorf("Load of a bad entry: %v; want it to name the ConfigMap and the key", err)
	}
	forbid.Store(true)
	s := h.store()
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
	s := &Store{exists: func(autoscaler.RevisionKey) bool { return true }, log: zap.NewNop()}
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

// TestLearnedStatesRefresh: a store that read a shard reads it again
// after Refresh, so a revision it takes over from another replica loads
// what that replica saved as it let go.
func TestLearnedStatesRefresh(t *testing.T) {
	h := start(nil, []string{"hello"})
	ctx := context.Background()
	taker, giver := h.store(), h.store()
	if got, err := taker.Load(ctx, hello); got != nil || err != nil {
		t.Fatalf("before any save: %v, %v", got, err)
	}
	if err := giver.Save(ctx, map[autoscaler.RevisionKey][]byte{hello: {7}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := taker.Load(ctx, hello); got != nil {
		t.Fatalf("the shard as read before: %v (the test needs the stale read)", got)
	}
	taker.Refresh()
	if got, err := taker.Load(ctx, hello); !cmp.Equal(got, []byte{7}) || err != nil {
		t.Errorf("after Refresh: %v, %v; want what the other replica saved", got, err)
	}
}

// heldBuckets is a fence.Keeper holding the buckets set true.
type heldBuckets struct{ held sync.Map } // bucket -> true

func (k *heldBuckets) Hold(i int) (time.Duration, func()) {
	if _, ok := k.held.Load(i); ok {
		return time.Minute, func() {}
	}
	return 0, nil
}

// byName is each test revision's bucket: hello's is 1, the others' 2.
func byName(k autoscaler.RevisionKey) int {
	if k == hello {
		return 1
	}
	return 2
}

// TestLearnedStatesFenced: a state the fence refuses (its bucket is
// not this replica's to write now) is not written, and the save says so;
// the others are.
func TestLearnedStatesFenced(t *testing.T) {
	h := start(nil, []string{"hello", "third"})
	third := autoscaler.RevisionKey{Namespace: "default", Name: "third"}
	s := h.store()
	k := &heldBuckets{}
	k.held.Store(2, true)
	s.SetFence(k, byName)
	err := s.Save(context.Background(), map[autoscaler.RevisionKey][]byte{hello: {1}, third: {2}})
	if err == nil || !strings.Contains(err.Error(), "default/hello") || !errors.Is(err, fence.ErrFenced) {
		t.Errorf("Save = %v, want it to name the fenced default/hello", err)
	}
	if got, _ := h.store().Load(context.Background(), hello); got != nil {
		t.Errorf("the fenced state was written: %v", got)
	}
	if got, _ := h.store().Load(context.Background(), third); len(got) != 1 || got[0] != 2 {
		t.Errorf("the state through the fence: %v, want [2]", got)
	}
}

// TestLearnedStatesConflictRetryFenced: the bucket is taken over while a
// save is on its way, and the new holder saves first (the old holder's
// write conflicts). The retry checks the fence again: the old holder's
// state never replaces the new holder's, and Save returns the refusal,
// not nil.
func TestLearnedStatesConflictRetryFenced(t *testing.T) {
	name := Name(hello)
	k := &heldBuckets{}
	k.held.Store(1, true)
	var updates atomic.Int32
	h := start(func(c *fake.Clientset) {
		c.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if updates.Add(1) > 1 {
				return false, nil, nil
			}
			// The first write, the old holder's: the new one took the
			// bucket and saved its state meanwhile.
			k.held.Delete(1)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: config.SystemNamespace},
				Data: map[string]string{"default.hello": "Ag=="}} // the new holder's [2]
			if err := c.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, cm, config.SystemNamespace); err != nil {
				return true, nil, err
			}
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, name, errors.New("the object has been modified"))
		})
	}, []string{"hello"}, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: config.SystemNamespace}})
	s := h.store()
	s.SetFence(k, byName)
	err := s.Save(context.Background(), map[autoscaler.RevisionKey][]byte{hello: {1}})
	if !errors.Is(err, fence.ErrFenced) {
		t.Errorf("Save = %v, want the fence's refusal", err)
	}
	if got := h.shard(t, hello).Data["default.hello"]; got != "Ag==" {
		t.Errorf("the shard holds %q, want the new holder's state Ag==", got)
	}
	if n := updates.Load(); n != 1 {
		t.Errorf("%d updates, want 1 (the retry refused before it is sent)", n)
	}
}
