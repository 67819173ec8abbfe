package learnedstore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/fence"
)

// The learned scale-to-zero policy's state (autoscaler.LearnedStore) is
// kept in Shards ConfigMaps in Ebb's own namespace, named
// config.LearnedStatePrefix + shard: a revision's shard is a hash of its key, its
// entry NAMESPACE.NAME (a namespace has no dot), its value the base64 of
// the blob. Why there, and not on each Deployment: the autoscaler writes
// no user object besides the scale subresource (an annotation would need
// patch on every Deployment of the cluster, which is the right to change
// any pod template), its own namespace's ConfigMaps are granted by name,
// and a batch of saves is one write per shard instead of one per
// revision. Entries of revisions that are gone are pruned when their shard
// is written.
const (
	shards = 8
	// component is the app.kubernetes.io/component of the shards.
	component = "learned-state"
	// maxShardBytes keeps a shard under the API server's 1 MiB object
	// limit, with room for its metadata. At 10,000 revisions a shard
	// holds 1,250 of them, 700 bytes each on average at most.
	maxShardBytes = 900 << 10
)

// Names are the shards' names (the Role grants them by name).
func Names() []string {
	names := make([]string, shards)
	for i := range names {
		names[i] = shardName(i)
	}
	return names
}

func shardName(i int) string { return config.LearnedStatePrefix + strconv.Itoa(i) }

// Options configure a Store.
type Options struct {
	Client k8s.Interface
	// Namespace is Ebb's namespace, where the shards are.
	Namespace string
	// Exists reports whether a revision is still opted in: the entries of
	// the others are pruned when their shard is written.
	Exists func(autoscaler.RevisionKey) bool
	Logger *zap.Logger      // nil: no logs
	Now    func() time.Time // nil: time.Now
}

// Store is the Kubernetes autoscaler.LearnedStore. Safe for concurrent
// use; each replica saves the revisions it decides for.
type Store struct {
	client k8s.Interface
	ns     string
	log    *zap.Logger
	exists func(autoscaler.RevisionKey) bool
	now    func() time.Time
	shards [shards]learnedShard
	fence  atomic.Pointer[storeFence] // SetFence
}

// storeFence is what SetFence set.
type storeFence struct {
	keeper   fence.Keeper
	bucketOf func(autoscaler.RevisionKey) int
}

// SetFence sets the keeper of the buckets (leader.Buckets) each
// revision's state is held to, and the revision's bucket: a state is
// written only while its bucket is held, checked before the shard's
// write and before each retry of it (a conflict reads the shard again,
// which may hold a newer holder's state), and again by the client's
// transport as the request is sent (fence.Transport). A state refused
// is not saved, and the save says so; without it, every state is
// written.
func (s *Store) SetFence(k fence.Keeper, bucketOf func(autoscaler.RevisionKey) int) {
	s.fence.Store(&storeFence{keeper: k, bucketOf: bucketOf})
}

// claim is ctx for writing the states of revs: fence.For their buckets.
func (s *Store) claim(ctx context.Context, revs ...autoscaler.RevisionKey) context.Context {
	f := s.fence.Load()
	if f == nil {
		return ctx
	}
	buckets := make([]int, 0, len(revs))
	for _, r := range revs {
		if b := f.bucketOf(r); !slices.Contains(buckets, b) {
			buckets = append(buckets, b)
		}
	}
	return fence.For(ctx, f.keeper, buckets...)
}

// New returns a store; it starts nothing.
func New(o Options) *Store {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Store{client: o.Client, ns: o.Namespace, log: o.Logger, exists: o.Exists, now: o.Now}
}

// learnedReadRetry is how long a shard that could not be read answers
// every Load with that error at once: at a leader's start thousands of
// revisions load, and they must not each wait on an API server that is
// not answering (they learn afresh instead, and say so).
const learnedReadRetry = 10 * time.Second

// learnedShard is one ConfigMap as last read or written. Its mutex is held
// across the shard's API calls on purpose: the first Load reads it once
// for all the revisions that wait, and a write never races a read.
type learnedShard struct {
	mu     sync.Mutex
	loaded bool
	exists bool
	rv     string
	data   map[string]string
	// failed is when a read last failed, with its error.
	failed    time.Time
	failedErr error
}

var _ autoscaler.LearnedStore = (*Store)(nil)

// Name is the ConfigMap that holds a revision's learned state, under the
// key Key.
func Name(k autoscaler.RevisionKey) string { return shardName(shardOf(k)) }

// Key is a revision's key in its ConfigMap.
func Key(k autoscaler.RevisionKey) string { return k.Namespace + "." + k.Name }

func shardOf(k autoscaler.RevisionKey) int {
	h := fnv.New32a()
	h.Write([]byte(k.String()))
	return int(h.Sum32() % shards)
}

// entryKey is a revision's entry: NAMESPACE.NAME, within the 253
// characters of a ConfigMap key.
func entryKey(k autoscaler.RevisionKey) (string, bool) {
	s := Key(k)
	return s, len(s) <= 253
}

// Load implements autoscaler.LearnedStore.
func (s *Store) Load(ctx context.Context, rev autoscaler.RevisionKey) ([]byte, error) {
	key, ok := entryKey(rev)
	if !ok {
		return nil, nil
	}
	sh := &s.shards[shardOf(rev)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if err := s.read(ctx, sh, shardOf(rev)); err != nil {
		return nil, err
	}
	v, ok := sh.data[key]
	if !ok {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s%d key %s: not base64: %w", s.ns, config.LearnedStatePrefix, shardOf(rev), key, err)
	}
	return b, nil
}

// read loads a shard unless it is loaded (a failed write unloads it).
func (s *Store) read(ctx context.Context, sh *learnedShard, i int) error {
	if sh.loaded {
		return nil
	}
	if sh.failedErr != nil && s.now().Sub(sh.failed) < learnedReadRetry {
		return sh.failedErr
	}
	cm, err := s.client.CoreV1().ConfigMaps(s.ns).Get(ctx, shardName(i), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		sh.exists, sh.rv, sh.data = false, "", map[string]string{}
	case err != nil:
		sh.failed, sh.failedErr = s.now(), fmt.Errorf("reading ConfigMap %s/%s%d (again from %s on): %w", s.ns, config.LearnedStatePrefix, i,
			s.now().Add(learnedReadRetry).Format(time.TimeOnly), err)
		return sh.failedErr
	default:
		sh.exists, sh.rv, sh.data = true, cm.ResourceVersion, maps.Clone(cm.Data)
		if sh.data == nil {
			sh.data = map[string]string{}
		}
	}
	sh.loaded, sh.failedErr = true, nil
	return nil
}

// Save implements autoscaler.LearnedStore: one write per shard of the
// batch, of the states whose bucket this replica holds (SetFence).
func (s *Store) Save(ctx context.Context, states map[autoscaler.RevisionKey][]byte) error {
	var byShard [shards]map[string][]byte
	var revsOf [shards][]autoscaler.RevisionKey
	var fenced []string
	for rev, b := range states {
		if fence.Check(s.claim(ctx, rev)) != nil {
			fenced = append(fenced, rev.String())
			continue
		}
		key, ok := entryKey(rev)
		if !ok {
			s.log.Warn("learned state not saved: the revision's name is too long for a ConfigMap key", zap.String("revision", rev.String()))
			continue
		}
		i := shardOf(rev)
		if byShard[i] == nil {
			byShard[i] = map[string][]byte{}
		}
		byShard[i][key] = b
		revsOf[i] = append(revsOf[i], rev)
	}
	var errs []error
	if len(fenced) > 0 {
		slices.Sort(fenced)
		errs = append(errs, fmt.Errorf("learned state of %v not saved: %w", fenced, fence.ErrFenced))
	}
	for i, batch := range byShard {
		if batch != nil {
			errs = append(errs, s.saveShard(s.claim(ctx, revsOf[i]...), i, batch))
		}
	}
	return errors.Join(errs...)
}

// saveShard writes a batch into shard i, pruning the revisions that are
// gone; a conflict (the shard changed since it was read) reads it again
// and retries once. Each write, the retry included, is made only while
// every bucket of the batch is held (ctx's claim): the shard read again
// may hold the state a new holder saved, and an old holder's must never
// replace it.
func (s *Store) saveShard(ctx context.Context, i int, batch map[string][]byte) error {
	sh := &s.shards[i]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for try := 0; ; try++ {
		if err := s.read(ctx, sh, i); err != nil {
			return err
		}
		if err := fence.Check(ctx); err != nil {
			return fmt.Errorf("writing ConfigMap %s/%s%d: %w", s.ns, config.LearnedStatePrefix, i, err)
		}
		data := s.merged(sh.data, batch, i)
		cm, err := s.write(ctx, sh, i, data)
		if err == nil {
			sh.exists, sh.rv, sh.data = true, cm.ResourceVersion, data
			return nil
		}
		if (!apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err)) || try > 0 {
			sh.loaded = false // read it again next time
			return fmt.Errorf("writing ConfigMap %s/%s%d: %w", s.ns, config.LearnedStatePrefix, i, err)
		}
		sh.loaded = false
	}
}

// merged is the shard's data with the batch in and the gone revisions
// out; entries that would make it larger than maxShardBytes are left out
// (and logged).
func (s *Store) merged(old map[string]string, batch map[string][]byte, i int) map[string]string {
	data := make(map[string]string, len(old)+len(batch))
	size := 0
	for k, v := range old {
		ns, name, _ := strings.Cut(k, ".")
		if _, fresh := batch[k]; fresh || !s.exists(autoscaler.RevisionKey{Namespace: ns, Name: name}) {
			continue
		}
		data[k] = v
		size += len(k) + len(v)
	}
	full := 0
	for k, b := range batch {
		v := base64.StdEncoding.EncodeToString(b)
		if size+len(k)+len(v) > maxShardBytes {
			full++
			continue
		}
		data[k] = v
		size += len(k) + len(v)
	}
	if full > 0 {
		s.log.Warn("learned state not saved: its ConfigMap is full", zap.String("configmap", shardName(i)),
			zap.Int("revisions", full))
	}
	return data
}

func (s *Store) write(ctx context.Context, sh *learnedShard, i int, data map[string]string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: shardName(i), Namespace: s.ns,
		ResourceVersion: sh.rv, Labels: map[string]string{config.ManagedByLabel: config.ManagedBy, config.PartOfLabel: config.ManagedBy,
			config.ComponentLabel: component}},
		Data: data}
	if !sh.exists {
		return s.client.CoreV1().ConfigMaps(s.ns).Create(ctx, cm, metav1.CreateOptions{})
	}
	return s.client.CoreV1().ConfigMaps(s.ns).Update(ctx, cm, metav1.UpdateOptions{})
}

// Refresh makes the next Load of every shard read it again: another
// replica may have written it since this one read it (it held revisions
// that this one now takes over, and saved them as it let them go).
func (s *Store) Refresh() {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.loaded = false
		sh.mu.Unlock()
	}
}
