package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// N readers, each on its own session, cycle through a read/write lock
// (read-lock, unlock at once) while one writer on another session cycles
// too (write-lock, unlock). The writer's Lock latency is p50-ms and p99-ms
// over 50 write cycles after a warm-up of 5; the readers' cost over the
// same span is per read acquisition (req/op, notify/op, through their own
// proxy), the writer's per write cycle (w-req/op, w-notify/op, through
// another). reads/write is how many read acquisitions happened per write.
func BenchmarkSweepRWLock(b *testing.B) {
	sweep(b, "zkgen", sweepSizes([]int{8, 64, 256}, 1000), sweepRWLock)
}

func sweepRWLock(b *testing.B, n int) {
	const warm, writes = 5, 50
	rp, path := setup(b)
	wp := zktest.NewProxy(b, zktest.Shared(b, shared, sharedErr).Addr())
	readers := make([]runtime.LockHandle, n)
	for i, s := range sessions(b, rp.Addr(), n) {
		readers[i] = runtime.NewRWLock(s, runtime.At(path)).Read()
	}
	writer := runtime.NewRWLock(session(b, wp.Addr()), runtime.At(path)).Write()
	bg := context.Background()
	for _, l := range []runtime.LockHandle{readers[0], writer} { // parents, outside the counts
		if err := l.Lock(bg); err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(bg); err != nil {
			b.Fatal(err)
		}
	}
	rm, wm := newWireMeter(rp), newWireMeter(wp)
	lat := &durations{}
	var reads atomic.Int64 // read acquisitions inside the window
	b.ResetTimer()
	for b.Loop() {
		ctx, cancel := context.WithCancel(bg)
		var in atomic.Bool
		go func() {
			defer cancel()
			for i := 0; i < warm+writes; i++ {
				if i == warm {
					rm.start()
					wm.start()
					in.Store(true)
				}
				t0 := time.Now()
				if err := writer.Lock(bg); err != nil {
					b.Error(err)
					return
				}
				if i >= warm {
					lat.add(time.Since(t0))
				}
				if err := writer.Unlock(bg); err != nil {
					b.Error(err)
					return
				}
			}
			in.Store(false)
			rm.stop()
			wm.stop()
		}()
		untilCancelled(b, ctx, readers, func(l runtime.LockHandle) error {
			if err := l.Lock(ctx); err != nil {
				return err
			}
			if in.Load() {
				reads.Add(1)
			}
			return l.Unlock(bg)
		})
	}
	b.StopTimer()
	r := max(reads.Load(), 1)
	rm.report(b, int(r), "")
	wm.report(b, writes*b.N, "w-")
	b.ReportMetric(float64(r)/float64(writes*b.N), "reads/write")
	lat.report(b, "")
}
