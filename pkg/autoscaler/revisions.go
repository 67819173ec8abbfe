package autoscaler

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/stats"
)

// sharedConfig is one configuration shared by the revisions with the same
// annotations: a hundred thousand revisions of one template hold one
// config.Revision and one copy of their annotations. Guarded by
// Autoscaler.mu.
type sharedConfig struct {
	key  string // annotationsKey: the one copy the revisions point to
	rc   revisionConfig
	refs int
	// stale is why rc is not of the current config-autoscaler: the
	// annotations are invalid under it (SetConfig), and the revisions that
	// had them keep rc. A revision that comes with them is refused.
	stale error
}

// annotationsKey is a canonical form of annotations (sorted, each key and
// value ended by a 0 byte), the key of Autoscaler.configs.
func annotationsKey(ann map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(ann)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(ann[k])
		b.WriteByte(0)
	}
	return b.String()
}

// SetConfig validates new config-autoscaler data and, when valid, applies
// it to every revision. When invalid, or when it would make some
// revisions' annotations invalid, the error names every problem and the
// previous configuration stays in force (for those revisions, or for all).
func (a *Autoscaler) SetConfig(data map[string]string) error {
	cfg, err := config.NewAutoscalerFromMap(data)
	if err != nil {
		return fmt.Errorf("config-autoscaler rejected, the previous configuration stays: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cfg, a.cfgData = cfg, maps.Clone(data)
	failed := map[string]error{}
	for k, sc := range a.configs {
		rc, err := a.resolveLocked(sc.rc.annotations)
		if sc.stale = err; err != nil {
			failed[k] = err
			continue
		}
		sc.rc = rc
	}
	keep := map[string][]RevisionKey{} // the revisions that keep their configuration, by annotations
	for key, r := range a.revisions {
		if _, bad := failed[r.cfgKey]; bad {
			keep[r.cfgKey] = append(keep[r.cfgKey], key)
			continue
		}
		r.update(a.configs[r.cfgKey].rc)
	}
	var errs []error
	for k, keys := range keep {
		errs = append(errs, fmt.Errorf("%s keep%s the previous configuration: %w", revisionList(keys), plural(len(keys)), failed[k]))
	}
	slices.SortFunc(errs, func(x, y error) int { return strings.Compare(x.Error(), y.Error()) })
	return errors.Join(errs...)
}

// revisionList names up to 5 revisions, and how many more.
func revisionList(keys []RevisionKey) string {
	slices.SortFunc(keys, cmpKeys)
	names := make([]string, 0, 5)
	for _, k := range keys[:min(len(keys), 5)] {
		names = append(names, k.String())
	}
	s := "revision " + strings.Join(names, ", ")
	if len(keys) > 1 {
		s = "revisions " + strings.Join(names, ", ")
	}
	if n := len(keys) - len(names); n > 0 {
		s += fmt.Sprintf(" and %d more", n)
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

func (a *Autoscaler) resolveLocked(ann map[string]string) (revisionConfig, error) {
	rev, err := config.NewRevision(a.cfg, ann, a.deps.documents)
	if err != nil {
		return revisionConfig{}, err
	}
	return revisionConfig{rev: rev, configData: a.cfgData, annotations: ann}, nil
}

// configLocked returns the shared configuration of annotations, resolving
// it when no revision has them yet, and takes a reference to it.
func (a *Autoscaler) configLocked(ann map[string]string) (string, *sharedConfig, error) {
	k := annotationsKey(ann)
	sc, ok := a.configs[k]
	if ok && sc.stale != nil {
		return "", nil, sc.stale
	}
	if !ok {
		rc, err := a.resolveLocked(maps.Clone(ann))
		if err != nil {
			return "", nil, err
		}
		sc = &sharedConfig{key: k, rc: rc}
		a.configs[k] = sc
	}
	sc.refs++
	return sc.key, sc, nil
}

func (a *Autoscaler) unrefLocked(k string) {
	if sc := a.configs[k]; sc != nil {
		if sc.refs--; sc.refs <= 0 {
			delete(a.configs, k)
		}
	}
}

// Upsert adds a revision or changes its annotations; the same annotations
// again change nothing. Invalid annotations are rejected with every
// problem named; a running revision keeps its previous configuration.
// Adding a revision costs no goroutine and no I/O: it closes its first
// second at its next phase.
func (a *Autoscaler) Upsert(key RevisionKey, annotations map[string]string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, exists := a.revisions[key]
	if exists && r.cfgKey == annotationsKey(annotations) {
		return nil
	}
	k, sc, err := a.configLocked(annotations)
	switch {
	case err != nil && exists:
		return fmt.Errorf("revision %s: annotations rejected, the previous configuration stays: %w", key, err)
	case err != nil:
		return fmt.Errorf("revision %s: annotations rejected, not autoscaled until fixed: %w", key, err)
	case exists:
		a.unrefLocked(r.cfgKey)
		r.cfgKey = k
		r.update(sc.rc)
		return nil
	}
	r = initRevision(a.slabs.next(phaseOf(keyHash(key))), key, sc.rc, a.deps)
	r.cfgKey = k
	a.revisions[key] = r
	a.countLocked()
	a.deps.schedule.tick(r)
	return nil
}

// SetLabels gives a revision's labels (its pods'), from which its Knative
// names come (config.NamesOf: the Configuration and Service its metrics'
// labels name). A revision not autoscaled is ignored; a platform calls it
// after Upsert. Labels that name no parent cost the revision nothing.
func (a *Autoscaler) SetLabels(key RevisionKey, labels map[string]string) {
	a.mu.Lock()
	r := a.revisions[key]
	a.mu.Unlock()
	if r == nil {
		return
	}
	n := config.NamesOf(key.Namespace, key.Name, labels)
	if n == config.NamesOf(key.Namespace, key.Name, nil) {
		r.names.Store(nil)
		return
	}
	r.names.Store(&n)
}

// Delete stops autoscaling a revision that is gone: its reports not yet
// decided on and its learned state still waiting to be saved are dropped.
func (a *Autoscaler) Delete(key RevisionKey) {
	if r, _ := a.remove(key, evStop); r != nil && a.deps.learned != nil {
		a.deps.learned.forget(key)
	}
}

// remove takes a revision out and stops it with ev; nil when unknown. It
// returns the reports the revision had not taken.
func (a *Autoscaler) remove(key RevisionKey, ev uint32) (*revision, []stats.Stat) {
	a.mu.Lock()
	r, ok := a.revisions[key]
	if ok {
		delete(a.revisions, key)
		a.unrefLocked(r.cfgKey)
		a.countLocked()
	}
	a.mu.Unlock()
	if !ok {
		return nil, nil
	}
	reports := r.release()
	r.stop(ev)
	a.deps.series.forget(key)
	return r, reports
}

// Ingest takes an activator report. It never blocks on a revision.
func (a *Autoscaler) Ingest(st stats.Stat) error {
	key, err := ParseRevisionKey(st.Revision)
	if err != nil {
		return fmt.Errorf("activator report: %w", err)
	}
	if st.Source != stats.SourceActivator {
		return fmt.Errorf("report for %s from a %s: only activators push reports", key, st.Source)
	}
	a.mu.Lock()
	r, ok := a.revisions[key]
	a.mu.Unlock()
	if !ok || !r.report(st) {
		return fmt.Errorf("report for %s: %w", key, ErrUnknownRevision)
	}
	return nil
}

// EachSummary calls f with the summary of every revision's latest
// decision (none before its first), in no order: for callers that look at
// every revision often (the RevisionAutoscaler writer), and then ask
// StatusOf for the few that changed. Resting revisions are left out:
// their latest decision stands, and a million of them would cost a
// million reads each time.
func (a *Autoscaler) EachSummary(f func(Summary)) {
	// The schedule's ticking revisions are the awake ones: the cost is of
	// those, not of every revision (a million at rest cost nothing).
	awake := a.deps.schedule.appendTicking(nil)
	// From a random place each time: a caller that stops early (a rate
	// limit spent) reaches every revision in turn, not the same ones.
	start := 0
	if len(awake) > 0 {
		start = rand.IntN(len(awake))
	}
	for i := range awake {
		r := awake[(start+i)%len(awake)]
		if s, ok := r.history.latestSummary(); ok {
			s.Key, s.Resting = r.key, r.asleep.Load()
			f(s)
		}
	}
}

// StatusOf is one revision's current status (as Statuses lists it).
func (a *Autoscaler) StatusOf(key RevisionKey) (Status, bool) {
	a.mu.Lock()
	r, ok := a.revisions[key]
	a.mu.Unlock()
	if !ok {
		return Status{}, false
	}
	return r.currentStatus(), true
}

// statuses returns every revision's current status, sorted by key.
func (a *Autoscaler) statuses() []Status {
	a.mu.Lock()
	revs := slices.Collect(maps.Values(a.revisions))
	a.mu.Unlock()
	out := make([]Status, 0, len(revs))
	for _, r := range revs {
		out = append(out, r.currentStatus())
	}
	slices.SortFunc(out, func(x, y Status) int {
		return cmpKeys(RevisionKey{x.Namespace, x.Name}, RevisionKey{y.Namespace, y.Name})
	})
	return out
}

func cmpKeys(x, y RevisionKey) int {
	if c := strings.Compare(x.Namespace, y.Namespace); c != 0 {
		return c
	}
	return strings.Compare(x.Name, y.Name)
}

// decisions returns up to limit of a revision's last decisions, newest first.
func (a *Autoscaler) decisions(key RevisionKey, limit int) (Status, []DecisionView, error) {
	a.mu.Lock()
	r, ok := a.revisions[key]
	a.mu.Unlock()
	if !ok {
		return Status{}, nil, fmt.Errorf("%s: %w", key, ErrUnknownRevision)
	}
	return r.currentStatus(), r.history.last(limit), nil
}

func (a *Autoscaler) countLocked() {
	if a.deps.metrics != nil {
		a.deps.metrics.revisions.Set(float64(len(a.revisions)))
	}
}
