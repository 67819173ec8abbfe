package learned

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func snapshotOf(counts map[int]uint16) *learnedSnapshot {
	s := &learnedSnapshot{coldPerGap: coldPerGapScale}
	for b, c := range counts {
		s.counts[b] = c
	}
	return s
}

var snapshotCmp = cmp.AllowUnexported(learnedSnapshot{})

func TestLearnedStateRoundTrip(t *testing.T) {
	full, max16 := map[int]uint16{}, map[int]uint16{}
	for b := range gapBins {
		full[b] = uint16(maxGaps / gapBins)
		max16[b] = 0xffff // more than the policy holds: refused, but it bounds the size
	}
	tests := []struct {
		name string
		s    *learnedSnapshot
	}{
		{"empty", snapshotOf(nil)},
		{"a timer", snapshotOf(map[int]uint16{gapBin(300): 37})},
		{"first and last bins", snapshotOf(map[int]uint16{0: 1, gapBins - 1: 1000})},
		{"every bin", snapshotOf(full)},
		{"every bin at the 16-bit bound", snapshotOf(max16)},
		{"one bin at the bound", snapshotOf(map[int]uint16{7: maxGaps})},
		{"a sequence and cold requests", func() *learnedSnapshot {
			s := snapshotOf(map[int]uint16{3: 2, 40: 1})
			s.recent, s.coldPerGap = []uint8{3, 40, 3}, 5*coldPerGapScale+3
			return s
		}()},
		{"phases and start-ups", func() *learnedSnapshot {
			s := snapshotOf(map[int]uint16{gapBin(300): 3})
			s.recent, s.phases, s.startups = []uint8{uint8(gapBin(300))}, []uint8{30, 30, 0, 59}, []uint8{1, 255}
			return s
		}()},
		{"a full sequence", func() *learnedSnapshot {
			s := snapshotOf(map[int]uint16{0: 64, gapBins - 1: 64})
			for i := range recentGaps {
				s.recent = append(s.recent, uint8((i%2)*(gapBins-1)))
			}
			return s
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := marshalLearned(tt.s)
			if len(b) > MaxLearnedStateSize {
				t.Errorf("%d bytes, want at most MaxLearnedStateSize %d", len(b), MaxLearnedStateSize)
			}
			got, err := unmarshalLearned(b)
			if tt.s.total() > maxGaps {
				if !errors.Is(err, ErrLearnedStateCorrupt) {
					t.Errorf("%d gaps: %v, want ErrLearnedStateCorrupt", tt.s.total(), err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			if diff := cmp.Diff(tt.s, got, snapshotCmp); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLearnedStateSize: a timer's state is a few dozen bytes; the largest
// state the policy can hold stays within MaxLearnedStateSize (what a
// platform stores, base64 included, stays under 1 KiB).
func TestLearnedStateSize(t *testing.T) {
	timer := snapshotOf(map[int]uint16{gapBin(300): 37})
	timer.recent = slices.Repeat([]uint8{uint8(gapBin(300))}, 37)
	if n := len(marshalLearned(timer)); n > 64 {
		t.Errorf("a timer's state takes %d bytes, want at most 64", n)
	}
	full := snapshotOf(nil)
	for b := range gapBins {
		full.counts[b] = 0xffff
	}
	full.recent, full.coldPerGap = make([]uint8, recentGaps), maxColdPerGap*coldPerGapScale
	full.phases, full.startups = make([]uint8, phaseGaps), slices.Repeat([]uint8{maxStartup}, startupsKept)
	if n := len(marshalLearned(full)); n > MaxLearnedStateSize {
		t.Errorf("the largest state takes %d bytes, want at most MaxLearnedStateSize %d", n, MaxLearnedStateSize)
	}
	if MaxLearnedStateSize*4/3 > 1024 {
		t.Errorf("MaxLearnedStateSize %d: base64 of it exceeds 1 KiB", MaxLearnedStateSize)
	}
}

// withCRC appends the checksum to a body, so that a test reaches the
// checks behind it.
func withCRC(body ...byte) []byte {
	return binary.BigEndian.AppendUint32(body, crc32.ChecksumIEEE(body))
}

func TestLearnedStateRefused(t *testing.T) {
	good := marshalLearned(snapshotOf(map[int]uint16{3: 2}))
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-5] ^= 1 // the last byte before the checksum
	bins := byte(gapBins)
	tests := []struct {
		name string
		b    []byte
		want error
		msg  string
	}{
		{"empty", nil, ErrLearnedStateCorrupt, "not a learned state"},
		{"json", []byte(`{"gaps":[]}`), ErrLearnedStateCorrupt, "not a learned state"},
		{"version 4", withCRC('L', 4, bins, recentGaps, phaseGaps, startupsKept, 0), ErrLearnedStateForeign, "version 4"},
		{"another phase ring", withCRC('L', 3, bins, recentGaps, 16, startupsKept, 0, 0, 16, 0, 0), ErrLearnedStateForeign, "32 phases"},
		{"more phases than the ring", withCRC(append([]byte{'L', 3, bins, recentGaps, phaseGaps, startupsKept, 0, 0, 16, 33},
			make([]byte, 33)...)...), ErrLearnedStateCorrupt, "33 phases"},
		{"a phase past 59", withCRC('L', 3, bins, recentGaps, phaseGaps, startupsKept, 0, 0, 16, 1, 60, 0), ErrLearnedStateCorrupt, "phases: 60"},
		{"a start-up of 0s", withCRC('L', 3, bins, recentGaps, phaseGaps, startupsKept, 0, 0, 16, 0, 1, 0), ErrLearnedStateCorrupt, "start-ups: 0"},
		{"more start-ups than kept", withCRC('L', 3, bins, recentGaps, phaseGaps, startupsKept, 0, 0, 16, 0, 5, 1, 1, 1, 1, 1),
			ErrLearnedStateCorrupt, "5 start-ups"},
		{"version 3 without its start-ups", withCRC('L', 3, bins, recentGaps, phaseGaps, startupsKept, 0, 0, 16, 0),
			ErrLearnedStateCorrupt, "truncated"},
		{"version 2 with another sequence length", withCRC('L', 2, bins, 64, 0, 0, 16), ErrLearnedStateForeign, "latest gaps"},
		{"version 2 without the sequence", withCRC('L', 2, bins, recentGaps, 0), ErrLearnedStateCorrupt, "truncated"},
		{"version 2, a sequence past its capacity", withCRC('L', 2, bins, recentGaps, 0, 0x81, 0x01), ErrLearnedStateCorrupt, "more than"},
		{"version 2, a sequence past the bytes", withCRC('L', 2, bins, recentGaps, 0, 3, 1), ErrLearnedStateCorrupt, "bytes left"},
		{"version 2, a gap of the sequence past the last bin", withCRC('L', 2, bins, recentGaps, 0, 1, bins, 16), ErrLearnedStateCorrupt, "out of range"},
		{"version 2, no cold requests per gap", withCRC('L', 2, bins, recentGaps, 0, 1, 3), ErrLearnedStateCorrupt, "truncated"},
		{"version 2, fewer than 1 cold request per gap", withCRC('L', 2, bins, recentGaps, 0, 0, 15), ErrLearnedStateCorrupt, "out of range"},
		{"version 2, trailing bytes", withCRC('L', 2, bins, recentGaps, 0, 0, 16, 0), ErrLearnedStateCorrupt, "after the state"},
		{"another bin layout", withCRC('L', 1, 64, 0), ErrLearnedStateForeign, "64 bins"},
		{"truncated", good[:len(good)-1], ErrLearnedStateCorrupt, "checksum"},
		{"a flipped bit", flipped, ErrLearnedStateCorrupt, "checksum"},
		{"too short", []byte{'L', 1, bins, 0}, ErrLearnedStateCorrupt, "bytes"},
		{"too long", append([]byte{'L', 1, bins}, make([]byte, MaxLearnedStateSize)...), ErrLearnedStateCorrupt, "bytes"},
		{"more bins than there are", withCRC('L', 1, bins, 0xff, 0x01), ErrLearnedStateCorrupt, "more than"},
		{"a zero count", withCRC('L', 1, bins, 1, 0, 0), ErrLearnedStateCorrupt, "count 0"},
		{"a count above 16 bits", withCRC('L', 1, bins, 1, 0, 0x80, 0x80, 0x04), ErrLearnedStateCorrupt, "out of range"},
		{"a bin past the last", withCRC('L', 1, bins, 1, bins, 1), ErrLearnedStateCorrupt, "out of range"},
		{"fewer bins than said", withCRC('L', 1, bins, 2, 0, 1), ErrLearnedStateCorrupt, "truncated"},
		{"trailing bytes", withCRC('L', 1, bins, 0, 7), ErrLearnedStateCorrupt, "after the state"},
		{"more gaps than the policy holds", withCRC('L', 1, bins, 2, 0, 0xe8, 0x0f, 0, 0xe8, 0x0f), ErrLearnedStateCorrupt, "at most 2000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := unmarshalLearned(tt.b)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %v; want %v saying %q", err, tt.want, tt.msg)
			}
		})
	}
}

// TestLearnedStateVersion1: a blob of version 1 (the histogram alone, as
// written before the policy read the order of gaps) loads with an empty
// sequence and one cold request per gap, and is saved again as the
// current version.
func TestLearnedStateVersion1(t *testing.T) {
	v1 := withCRC('L', 1, byte(gapBins), 2, 3, 20, 10, 5) // bins 3 (20 gaps) and 14 (5 gaps)
	s, err := unmarshalLearned(v1)
	if err != nil {
		t.Fatalf("version 1: %v", err)
	}
	if diff := cmp.Diff(snapshotOf(map[int]uint16{3: 20, 14: 5}), s, snapshotCmp); diff != "" {
		t.Errorf("version 1 (-want +got):\n%s", diff)
	}
	p := New(testRevision())
	if n, err := p.Restore(v1); n != 25 || err != nil {
		t.Fatalf("Restore(version 1) = %d, %v; want 25 gaps", n, err)
	}
	blob, _ := p.State()
	if blob[1] != learnedVersion {
		t.Errorf("saved again as version %d, want %d", blob[1], learnedVersion)
	}
}

// TestLearnedStateVersion2: a blob of version 2 (the histogram, the
// sequence and the cold requests per gap, as written before the policy
// read the second of the minute) loads with no phases and no start-ups,
// and is saved again as the current version with what it held.
func TestLearnedStateVersion2(t *testing.T) {
	v2 := withCRC('L', 2, byte(gapBins), recentGaps, 1, 3, 20, 2, 3, 3, 40) // bin 3 (20 gaps), the sequence 3 3, 2.5 cold requests
	s, err := unmarshalLearned(v2)
	if err != nil {
		t.Fatalf("version 2: %v", err)
	}
	want := snapshotOf(map[int]uint16{3: 20})
	want.recent, want.coldPerGap = []uint8{3, 3}, 40
	if diff := cmp.Diff(want, s, snapshotCmp); diff != "" {
		t.Errorf("version 2 (-want +got):\n%s", diff)
	}
	p := New(testRevision())
	if n, err := p.Restore(v2); n != 20 || err != nil {
		t.Fatalf("Restore(version 2) = %d, %v; want 20 gaps", n, err)
	}
	blob, _ := p.State()
	again, err := unmarshalLearned(blob)
	if err != nil || blob[1] != learnedVersion {
		t.Fatalf("saved again as version %d: %v; want %d", blob[1], err, learnedVersion)
	}
	if diff := cmp.Diff(want, again, snapshotCmp); diff != "" {
		t.Errorf("version 2 saved again (-want +got):\n%s", diff)
	}
}

func FuzzUnmarshalLearned(f *testing.F) {
	f.Add(marshalLearned(snapshotOf(map[int]uint16{gapBin(300): 37})))
	f.Add(withCRC('L', 1, byte(gapBins), 1, 3, 20))
	f.Add(withCRC('L', 2, byte(gapBins), recentGaps, 1, 3, 20, 2, 3, 3, 40))
	f.Add(marshalLearned(&learnedSnapshot{counts: [128]uint16{3: 2}, recent: []uint8{3, 3}, coldPerGap: 40, phases: []uint8{30, 31},
		startups: []uint8{1, 3}}))
	f.Add(marshalLearned(&learnedSnapshot{counts: [128]uint16{3: 2}, recent: []uint8{3, 3}, coldPerGap: 40}))
	f.Add(marshalLearned(snapshotOf(map[int]uint16{0: 1, gapBins - 1: 1000})))
	f.Add([]byte{'L', 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := unmarshalLearned(b)
		if err != nil {
			if !errors.Is(err, ErrLearnedStateCorrupt) && !errors.Is(err, ErrLearnedStateForeign) {
				t.Fatalf("error %v wraps neither sentinel", err)
			}
			return
		}
		if s.total() > maxGaps {
			t.Fatalf("accepted %d gaps, more than %d", s.total(), maxGaps)
		}
		again, err := unmarshalLearned(marshalLearned(s))
		if err != nil {
			t.Fatalf("re-encoded state refused: %v", err)
		}
		if diff := cmp.Diff(s, again, snapshotCmp); diff != "" {
			t.Fatalf("re-encoded state differs (-first +second):\n%s", diff)
		}
		p := New(testRevision())
		if _, err := p.Restore(b); err != nil {
			t.Fatalf("Restore refused what unmarshal took: %v", err)
		}
		p.Decide(at(1<<40), 0, false, true, false)
	})
}
