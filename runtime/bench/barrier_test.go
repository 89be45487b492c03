package bench

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// Eight waiters, each on its own session, wait on a raised barrier; each
// iteration measures from Lower to the last waiter's Wait returning. The
// raise and the waiters' reads are outside the timing but in the wire
// counts (raise, 8 watched reads, delete: 10 requests, 8 notifications).
func BenchmarkBarrierRelease8(b *testing.B) {
	const waiters = 8
	p, path := setup(b)
	ctx := context.Background()
	ctl := runtime.NewBarrier(session(b, p.Addr()), runtime.At(path))
	ws := make([]*runtime.Barrier, waiters)
	for i := range ws {
		ws[i] = runtime.NewBarrier(session(b, p.Addr()), runtime.At(path))
	}
	if err := ctl.Raise(ctx); err != nil { // parents, outside the timing
		b.Fatal(err)
	}
	if err := ctl.Lower(ctx); err != nil {
		b.Fatal(err)
	}
	p.ResetCounts()
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if err := ctl.Raise(ctx); err != nil {
			b.Fatal(err)
		}
		before := p.Counts().Total()
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := w.Wait(ctx); err != nil {
					b.Error(err)
				}
			}()
		}
		for p.Counts().Total() < before+waiters { // every waiter's read sent
			time.Sleep(100 * time.Microsecond)
		}
		b.StartTimer()
		t0 := time.Now()
		if err := ctl.Lower(ctx); err != nil {
			b.Fatal(err)
		}
		wg.Wait()
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	report(b, p, b.N)
	ms(b, percentile(lat, 0.5), "p50-ms")
}
