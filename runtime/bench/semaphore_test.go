package bench

import (
	"context"
	"testing"

	"github.com/zkgen/zkgen/runtime"
)

// Eight sessions share a semaphore of 3 leases; b.N acquire+release in total.
func BenchmarkSemaphore8Sessions3Leases(b *testing.B) {
	const sessions, leases = 8, 3
	p, path := setup(b)
	ctx := context.Background()
	sems := make([]*runtime.Semaphore, sessions)
	for i := range sems {
		sems[i] = runtime.NewSemaphore(session(b, p.Addr()), runtime.At(path), leases)
	}
	le, err := sems[0].Acquire(ctx) // parents, outside the timing
	if err != nil {
		b.Fatal(err)
	}
	if err := le.Release(ctx); err != nil {
		b.Fatal(err)
	}
	p.ResetCounts()
	b.ReportAllocs()
	b.ResetTimer()
	runShared(b, sems, func(m *runtime.Semaphore) error {
		le, err := m.Acquire(ctx)
		if err != nil {
			return err
		}
		return le.Release(ctx)
	})
	b.StopTimer()
	report(b, p, b.N)
}
