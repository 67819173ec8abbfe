package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform"
	"ebb.dev/ebb/pkg/platform/local/resusage"
	"ebb.dev/ebb/pkg/stats"
)

// Platform runs revisions as local processes. Build it with New; Run does
// the work.
type Platform struct {
	o   Options
	log *zap.Logger

	mu   sync.Mutex // guards revs (the map, not the supervisors' own state)
	revs map[autoscaler.RevisionKey]*supervisor

	changed chan struct{} // buffered 1: the replica set or a readiness changed
	usage   *resusage.Reader
	wg      sync.WaitGroup
	runCtx  context.Context
}

// New returns a platform; it starts nothing.
func New(o Options) (*Platform, error) {
	o.setDefaults()
	if len(o.Paths) == 0 {
		return nil, fmt.Errorf("local platform: no manifest path; give a directory or files with a config-autoscaler ConfigMap and Deployments")
	}
	if o.QueueProxy == "" {
		return nil, fmt.Errorf("local platform: no queue-proxy binary; build it with `make build` and pass bin/queueproxy")
	}
	if o.ProxySecret == "" {
		var b [24]byte
		rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
		o.ProxySecret = hex.EncodeToString(b[:])
	}
	if err := stats.ValidateProxySecret(o.ProxySecret); err != nil {
		return nil, fmt.Errorf("local platform: proxy secret: %w", err)
	}
	return &Platform{o: o, log: o.Logger, revs: map[autoscaler.RevisionKey]*supervisor{}, changed: make(chan struct{}, 1),
		usage: resusage.NewReader(os.DirFS("/"))}, nil
}

// ProxySecret is the secret every queue-proxy of this platform expects in
// the activator's proxied-request marker (activator.Options.ProxySecret).
func (p *Platform) ProxySecret() string { return p.o.ProxySecret }

// Run loads the manifests, keeps them applied until ctx ends, then stops
// every replica in order and returns when all processes are gone.
func (p *Platform) Run(ctx context.Context) error {
	p.mu.Lock()
	p.runCtx = ctx
	p.mu.Unlock()
	var last string
	for {
		last = p.reload(last)
		select {
		case <-ctx.Done():
			p.stopAll()
			return nil
		case <-time.After(p.o.PollInterval):
		}
	}
}

// reload re-reads the manifests when their fingerprint changed and applies
// them; it returns the fingerprint it applied (or the old one on error, so
// the change is tried again).
func (p *Platform) reload(last string) string {
	files, err := manifestFiles(p.o.Paths)
	if err != nil {
		p.log.Error("manifests unreadable; keeping the running revisions", zap.Error(err))
		return last
	}
	fp := fingerprint(files)
	if fp == last {
		return last
	}
	st, err := load(files, p.o.WorkDir)
	if err != nil {
		p.log.Error("manifests invalid; keeping the running revisions until they are fixed", zap.Error(err))
		return fp // retried when the files change again
	}
	for _, w := range st.warnings {
		p.log.Warn("manifest field not honoured locally", zap.String("warning", w))
	}
	for _, s := range st.skipped {
		p.log.Info("deployment not opted in; add the label to autoscale it", zap.String("deployment", s), zap.String("label", config.LabelEnabled+": \"true\""))
	}
	p.apply(st)
	return fp
}

// apply hands the ConfigMap and the revisions to the listener and to the
// supervisors.
func (p *Platform) apply(st *state) {
	if st.config != nil && p.o.Listener != nil {
		if err := p.o.Listener.SetConfig(st.config); err != nil {
			p.log.Error("config-autoscaler rejected; the previous configuration stays", zap.Error(err))
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, sup := range p.revs {
		if _, ok := st.revisions[key]; !ok {
			p.log.Info("revision removed", zap.String("revision", key.String()))
			delete(p.revs, key)
			sup.shutdown()
			if p.o.Listener != nil {
				p.o.Listener.Delete(key)
			}
		}
	}
	for key, spec := range st.revisions {
		if p.o.Listener != nil {
			if err := p.o.Listener.Upsert(key, spec.annotations); err != nil {
				p.log.Error("revision annotations rejected", zap.String("revision", key.String()), zap.Error(err))
			} else if l, ok := p.o.Listener.(platform.Labeler); ok {
				l.SetLabels(key, spec.labels)
			}
		}
		if sup, ok := p.revs[key]; ok {
			sup.setSpec(spec)
			continue
		}
		sup := newSupervisor(p, spec)
		p.revs[key] = sup
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			sup.run(p.runCtx)
		}()
	}
	p.notify()
}

func (p *Platform) stopAll() {
	p.mu.Lock()
	sups := make([]*supervisor, 0, len(p.revs))
	for _, s := range p.revs {
		sups = append(sups, s)
	}
	p.mu.Unlock()
	for _, s := range sups {
		s.shutdown()
	}
	p.wg.Wait()
}

// notify wakes the activator's watchers.
func (p *Platform) notify() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

func (p *Platform) supervisor(key autoscaler.RevisionKey) (*supervisor, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.revs[key]
	if !ok {
		return nil, fmt.Errorf("revision %s is not in the local manifests", key)
	}
	return s, nil
}

// ReadyPods implements autoscaler.Platform.
func (p *Platform) ReadyPods(_ context.Context, key autoscaler.RevisionKey) ([]autoscaler.Pod, error) {
	s, err := p.supervisor(key)
	if err != nil {
		return nil, err
	}
	var pods []autoscaler.Pod
	for _, r := range s.replicaList() {
		if r.ready.Load() && !r.stopping.Load() {
			pods = append(pods, autoscaler.Pod{Name: r.name, StatsAddr: r.adminAddr(), Started: r.started})
		}
	}
	return pods, nil
}

// Scale implements autoscaler.Platform.
func (p *Platform) Scale(_ context.Context, key autoscaler.RevisionKey, n int32) error {
	s, err := p.supervisor(key)
	if err != nil {
		return err
	}
	if n == 0 {
		s.parked.Store(false) // its replica goes: nothing is parked
	}
	s.scale(int(n))
	return nil
}

// SetActivatorInPath implements autoscaler.Platform. Locally every request
// enters through the activator; the state is only recorded.
func (p *Platform) SetActivatorInPath(_ context.Context, key autoscaler.RevisionKey, in bool) error {
	s, err := p.supervisor(key)
	if err != nil {
		return err
	}
	s.activatorInPath.Store(in)
	return nil
}

// Watch implements activator.Platform: the revisions and their replicas,
// at once and after every change.
func (p *Platform) Watch(ctx context.Context, apply func([]activator.Revision)) error {
	for {
		apply(p.activatorView())
		select {
		case <-ctx.Done():
			return nil
		case <-p.changed:
		case <-time.After(time.Second):
		}
	}
}

func (p *Platform) activatorView() []activator.Revision {
	p.mu.Lock()
	sups := make([]*supervisor, 0, len(p.revs))
	for _, s := range p.revs {
		sups = append(sups, s)
	}
	p.mu.Unlock()
	out := make([]activator.Revision, 0, len(sups))
	for _, s := range sups {
		spec := s.currentSpec()
		rev := activator.Revision{Namespace: spec.key.Namespace, Name: spec.key.Name, Labels: spec.labels,
			ContainerConcurrency: spec.concurrency, Timeout: spec.requestTimeout(), LoadBalancing: spec.lb, Activators: 1}
		for _, r := range s.replicaList() {
			if !r.stopping.Load() {
				rev.Replicas = append(rev.Replicas, activator.Replica{Address: r.servingAddr(), Ready: r.ready.Load()})
			}
		}
		out = append(out, rev)
	}
	slices.SortFunc(out, func(a, b activator.Revision) int {
		if a.Key() < b.Key() {
			return -1
		}
		return 1
	})
	return out
}

// SetListener sets who hears of manifest changes; call it before Run.
func (p *Platform) SetListener(l platform.Listener) { p.o.Listener = l }
