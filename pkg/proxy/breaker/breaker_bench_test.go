package breaker

import (
	"context"
	"testing"
)

// BenchmarkReserveRelease is the queue-proxy's per-request cost with
// containerConcurrency > 0 and a free slot.
func BenchmarkReserveRelease(b *testing.B) {
	br := mustNew(b, Params{Capacity: 10, QueueDepth: 100})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := br.Reserve(ctx); err != nil {
			b.Fatal(err)
		}
		br.Release()
	}
}

// BenchmarkReserveReleaseParallel runs more goroutines than slots, so the
// slow path (queue, hand-over) is exercised.
func BenchmarkReserveReleaseParallel(b *testing.B) {
	br := mustNew(b, Params{Capacity: 2, QueueDepth: 1 << 16})
	ctx := context.Background()
	b.SetParallelism(8)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := br.Reserve(ctx); err != nil {
				b.Fatal(err)
			}
			br.Release()
		}
	})
}

// BenchmarkChannelSemaphore is the baseline: the textbook buffered-channel
// semaphore (no queue bound, no FIFO guarantee).
func BenchmarkChannelSemaphore(b *testing.B) {
	sem := make(chan struct{}, 10)
	b.ReportAllocs()
	for b.Loop() {
		sem <- struct{}{}
		<-sem
	}
}

func BenchmarkChannelSemaphoreParallel(b *testing.B) {
	sem := make(chan struct{}, 2)
	b.SetParallelism(8)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			sem <- struct{}{}
			<-sem
		}
	})
}
