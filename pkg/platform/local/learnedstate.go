package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// LearnedFiles is the local autoscaler.LearnedStore: one file per
// revision in a directory (`autoscaler run --state-dir`), named
// NAMESPACE.NAME.learned (a namespace has no dot) and holding the state's
// bytes. A save writes a temporary file in the directory and renames it
// over the old one, so a crash leaves the old state or the new, never half
// of one.
type LearnedFiles struct {
	dir string
}

var _ autoscaler.LearnedStore = (*LearnedFiles)(nil)

// NewLearnedFiles returns the store in dir, creating the directory (mode
// 0700) if needed.
func NewLearnedFiles(dir string) (*LearnedFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("learned state directory: %w", err)
	}
	return &LearnedFiles{dir: dir}, nil
}

func (s *LearnedFiles) path(rev autoscaler.RevisionKey) string {
	return filepath.Join(s.dir, rev.Namespace+"."+rev.Name+".learned")
}

// Load implements autoscaler.LearnedStore. A file larger than any state
// is read only in part (the decider then refuses it as corrupt).
func (s *LearnedFiles) Load(_ context.Context, rev autoscaler.RevisionKey) ([]byte, error) {
	f, err := os.Open(s.path(rev))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading learned state: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, decider.MaxLearnedStateSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading learned state %s: %w", f.Name(), err)
	}
	return b, nil
}

// Save implements autoscaler.LearnedStore: each state is written to its
// own file, atomically.
func (s *LearnedFiles) Save(_ context.Context, states map[autoscaler.RevisionKey][]byte) error {
	var errs []error
	for rev, b := range states {
		if err := s.write(s.path(rev), b); err != nil {
			errs = append(errs, fmt.Errorf("saving learned state of %s: %w", rev, err))
		}
	}
	return errors.Join(errs...)
}

func (s *LearnedFiles) write(path string, b []byte) error {
	tmp, err := os.CreateTemp(s.dir, ".learned-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
