package bench

import (
	"context"
	"testing"

	"github.com/zkgen/zkgen/runtime"
)

// N participants, each on its own session, cycle through a semaphore of 2
// leases (acquire, release at once), so that N-2 of them are always queued.
// Hand-off latency is from a holder starting Release to the acquisition it
// lets in returning (handoffs); req/op and notify/op are per acquisition
// (its release included), over 200 acquisitions after a warm-up of N.
func BenchmarkSweepSemaphore(b *testing.B) {
	sweep(b, "zkgen", sweepSizes([]int{8, 64, 256}, 1000), sweepSemaphore)
}

func sweepSemaphore(b *testing.B, n int) {
	const leases, ops = 2, 200
	p, path := setup(b)
	sems := make([]*runtime.Semaphore, n)
	for i, s := range sessions(b, p.Addr(), n) {
		sems[i] = runtime.NewSemaphore(s, runtime.At(path), leases)
	}
	bg := context.Background()
	le, err := sems[0].Acquire(bg) // parents, outside the wire counts
	if err != nil {
		b.Fatal(err)
	}
	if err := le.Release(bg); err != nil {
		b.Fatal(err)
	}
	m := newWireMeter(p)
	lat := &durations{}
	b.ResetTimer()
	for b.Loop() {
		h := &handoffs{lat: lat}
		ctx, cancel := context.WithCancel(bg)
		w := newWindow(n, ops, func() {
			m.start()
			h.mu.Lock()
			h.on = true
			h.mu.Unlock()
		}, func() {
			m.stop()
			h.mu.Lock()
			h.on = false
			h.mu.Unlock()
			cancel()
		})
		untilCancelled(b, ctx, sems, func(s *runtime.Semaphore) error {
			le, err := s.Acquire(ctx)
			if err != nil {
				return err
			}
			h.acquired()
			w.tick()
			h.release()
			return le.Release(bg)
		})
		cancel()
	}
	b.StopTimer()
	m.report(b, ops*b.N, "")
	lat.report(b, "")
}
