package filesource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"ebb.dev/ebb/pkg/activator"
	"ebb.dev/ebb/pkg/config"
)

// file is the JSON document.
type file struct {
	Revisions []fileRevision `json:"revisions"`
}

// fileRevision is one revision in the file.
type fileRevision struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// ContainerConcurrency is the per-replica limit; 0 is unlimited.
	ContainerConcurrency int `json:"containerConcurrency"`
	// Timeout is the request timeout, a Go duration; default 300s.
	Timeout string `json:"timeout,omitempty"`
	// QueueTimeout bounds the wait for a replica, a Go duration; default
	// the activator's.
	QueueTimeout string `json:"queueTimeout,omitempty"`
	// Annotations are the revision template's; the activator reads
	// autoscaling.ebb.dev/load-balancing.
	Annotations map[string]string `json:"annotations,omitempty"`
	// Activators is the number of activators serving the revision.
	Activators int `json:"activators,omitempty"`
	// ActivatorIndex is this activator's 1-based position among them
	// (0: unknown); with a limited containerConcurrency the activators
	// then split the replicas instead of sharing each one.
	ActivatorIndex int           `json:"activatorIndex,omitempty"`
	Replicas       []fileReplica `json:"replicas,omitempty"`
}

// fileReplica is one replica: its queue-proxy's address.
type fileReplica struct {
	Address string `json:"address"`
	Ready   bool   `json:"ready,omitempty"`
}

// parse decodes and checks a file. Every problem comes back at once.
func parse(data []byte) ([]activator.Revision, error) {
	var f file
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("decoding the revisions file: %w", err)
	}
	var errs []error
	out := make([]activator.Revision, 0, len(f.Revisions))
	for i, fr := range f.Revisions {
		r, err := fr.revision()
		if err != nil {
			errs = append(errs, fmt.Errorf("revisions[%d] (%s/%s): %w", i, fr.Namespace, fr.Name, err))
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

func (fr *fileRevision) revision() (activator.Revision, error) {
	var errs []error
	r := activator.Revision{
		Namespace: fr.Namespace, Name: fr.Name, ContainerConcurrency: fr.ContainerConcurrency,
		Activators: fr.Activators, ActivatorIndex: fr.ActivatorIndex, Timeout: config.DefaultRevisionTimeout,
	}
	if fr.ContainerConcurrency < 0 || fr.ContainerConcurrency > config.ContainerConcurrencyMax {
		errs = append(errs, fmt.Errorf("containerConcurrency %d: must be within [0, %d]", fr.ContainerConcurrency, config.ContainerConcurrencyMax))
	}
	if fr.Activators < 0 {
		errs = append(errs, fmt.Errorf("activators %d: must not be negative", fr.Activators))
	}
	if fr.ActivatorIndex < 0 || fr.ActivatorIndex > max(fr.Activators, 1) {
		errs = append(errs, fmt.Errorf("activatorIndex %d: must be within [0, %d] (this activator's 1-based position among the activators; 0: unknown)",
			fr.ActivatorIndex, max(fr.Activators, 1)))
	}
	var err error
	if r.Timeout, err = duration("timeout", fr.Timeout, config.DefaultRevisionTimeout); err != nil {
		errs = append(errs, err)
	}
	if r.QueueTimeout, err = duration("queueTimeout", fr.QueueTimeout, 0); err != nil {
		errs = append(errs, err)
	}
	if r.LoadBalancing, err = activator.ParseLoadBalancing(fr.Annotations[config.AnnotationLoadBalancing]); err != nil {
		errs = append(errs, err)
	}
	for j, rep := range fr.Replicas {
		if rep.Address == "" {
			errs = append(errs, fmt.Errorf("replicas[%d]: address must not be empty", j))
		}
		r.Replicas = append(r.Replicas, activator.Replica{Address: rep.Address, Ready: rep.Ready})
	}
	return r, errors.Join(errs...)
}

func duration(field, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s %q: must be a positive Go duration such as 30s", field, s)
	}
	return d, nil
}

// Source watches a revisions file. It implements activator.Platform.
type Source struct {
	Path     string
	Interval time.Duration   // re-read period; 0 means 1s
	Reload   <-chan struct{} // re-read at once on each value; may be nil
	Clock    activator.Clock // nil: the system clock
	Logger   *zap.Logger     // nil: no logs
}

// Load reads and parses the file once (cmd/activator checks it at start).
func (s *Source) Load() ([]activator.Revision, []byte, error) {
	data, err := os.ReadFile(s.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the revisions file: %w", err)
	}
	revs, err := parse(data)
	if err != nil {
		return nil, data, fmt.Errorf("%s: %w", s.Path, err)
	}
	return revs, data, nil
}

// Watch implements activator.Platform: it applies the file at once (an
// error then is returned), then whenever its content changes.
func (s *Source) Watch(ctx context.Context, apply func([]activator.Revision)) error {
	revs, last, err := s.Load()
	if err != nil {
		return err
	}
	apply(revs)
	clock, log := s.Clock, s.Logger
	if clock == nil {
		clock = activator.SystemClock{}
	}
	if log == nil {
		log = zap.NewNop()
	}
	interval := s.Interval
	if interval <= 0 {
		interval = time.Second
	}
	t := clock.NewTicker(interval)
	defer t.Stop()
	var rejected string // the last error, so each problem is reported once
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		case <-s.Reload:
		}
		revs, data, err := s.Load()
		switch {
		case err != nil && err.Error() != rejected:
			log.Warn("ignoring the revisions file; the last good content stays in force", zap.Error(err))
			rejected = err.Error()
		case err == nil && !bytes.Equal(data, last):
			last, rejected = data, ""
			log.Info("revisions file changed", zap.Int("revisions", len(revs)))
			apply(revs)
		}
	}
}
