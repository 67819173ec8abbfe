package autoscaler

import (
	"testing"
	"unsafe"
)

// TestRevisionSlabsKeepAPhaseTogether: the revisions of one phase come
// out of one allocation, next to each other, slabRevisions at a time;
// another phase's do not come between them.
func TestRevisionSlabsKeepAPhaseTogether(t *testing.T) {
	var s revisionSlabs
	size := unsafe.Sizeof(revision{})
	prev := s.next(7)
	for i := 1; i < 2*slabRevisions; i++ {
		other := s.next(8)
		r := s.next(7)
		if r == prev || r == other {
			t.Fatalf("revision %d of phase 7: a slot handed out twice", i)
		}
		gap := uintptr(unsafe.Pointer(r)) - uintptr(unsafe.Pointer(prev))
		if i%slabRevisions != 0 && gap != size {
			t.Fatalf("revision %d of phase 7 is %d bytes after the one before, want %d (the next slot of its slab)", i, gap, size)
		}
		if r.key != (RevisionKey{}) || r.deps != nil {
			t.Fatalf("revision %d of phase 7: its memory is not zero", i)
		}
		prev = r
	}
}

// TestUpsertUsesTheSlabs: a revision Upsert adds sits in its phase's slab.
func TestUpsertUsesTheSlabs(t *testing.T) {
	a := New(Options{Platform: newScalePlatform(), Scraper: scaleScraper{new(int64)}})
	key := RevisionKey{Namespace: "default", Name: "hello"}
	if err := a.Upsert(key, nil); err != nil {
		t.Fatal(err)
	}
	r := a.revisions[key]
	next := a.slabs.next(r.phase)
	if uintptr(unsafe.Pointer(next))-uintptr(unsafe.Pointer(r)) != unsafe.Sizeof(revision{}) {
		t.Fatalf("the revision is not the slot before the next one of its phase's slab")
	}
	if r.key != key || r.phase != phaseOf(keyHash(key)) {
		t.Fatalf("revision %v phase %d, want %v phase %d", r.key, r.phase, key, phaseOf(keyHash(key)))
	}
}
