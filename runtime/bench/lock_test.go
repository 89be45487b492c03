package bench

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// locker is what both implementations offer.
type locker interface {
	lock() error
	unlock() error
}

type zkgenLock struct {
	l   *runtime.Lock
	ctx context.Context
}

func (z zkgenLock) lock() error   { return z.l.Lock(z.ctx) }
func (z zkgenLock) unlock() error { return z.l.Unlock(z.ctx) }

// cancellable is a context that can be cancelled, as most callers' are: the
// runtime then waits on the reply in a goroutine so that it can honour
// cancellation, which costs two goroutine hand-offs per request.
func cancellable(b *testing.B) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	return ctx
}

type gozkLock struct{ l *zk.Lock }

func (g gozkLock) lock() error   { return g.l.Lock() }
func (g gozkLock) unlock() error { return g.l.Unlock() }

var impls = []struct {
	name string
	new  func(b *testing.B, addr, path string) locker
}{
	{"zkgen", func(b *testing.B, addr, path string) locker {
		return zkgenLock{runtime.NewLock(session(b, addr), runtime.At(path)), context.Background()}
	}},
	{"zkgen-cancellable", func(b *testing.B, addr, path string) locker {
		return zkgenLock{runtime.NewLock(session(b, addr), runtime.At(path)), cancellable(b)}
	}},
	{"gozk", func(b *testing.B, addr, path string) locker {
		return gozkLock{zk.NewLock(gozk(b, addr), path, zk.WorldACL(zk.PermAll))}
	}},
}

// One client: acquire and release, no contention.
func BenchmarkLockUncontended(b *testing.B) {
	for _, impl := range impls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			p, path := setup(b)
			lockCycles(b, p, impl.new(b, p.Addr(), path))
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
	for _, impl := range peers {
		b.Run("impl="+impl.name, func(b *testing.B) { peerRun(b, impl, "lock", "ops/s") })
	}
}

// lockCycles times b.N acquire-release cycles of l, alone on its lock,
// behind the counting proxy p; the first cycle, which creates the
// parents, is left out.
func lockCycles(b *testing.B, p *zktest.Proxy, l locker) {
	if err := l.lock(); err != nil {
		b.Fatal(err)
	}
	if err := l.unlock(); err != nil {
		b.Fatal(err)
	}
	p.ResetCounts()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := l.lock(); err != nil {
			b.Fatal(err)
		}
		if err := l.unlock(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	report(b, p, b.N)
}

// Eight sessions contend for one lock; b.N acquisitions in total.
func BenchmarkLockContended8(b *testing.B) {
	const clients = 8
	for _, impl := range impls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			p, path := setup(b)
			ls := make([]locker, clients)
			for i := range ls {
				ls[i] = impl.new(b, p.Addr(), path)
			}
			if err := ls[0].lock(); err != nil {
				b.Fatal(err)
			}
			if err := ls[0].unlock(); err != nil {
				b.Fatal(err)
			}
			p.ResetCounts()
			b.ResetTimer()
			var wg sync.WaitGroup
			work := make(chan struct{}, b.N)
			for i := 0; i < b.N; i++ {
				work <- struct{}{}
			}
			close(work)
			for _, l := range ls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range work {
						if err := l.lock(); err != nil {
							b.Error(err)
							return
						}
						if err := l.unlock(); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			report(b, p, b.N)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
	for _, impl := range peers {
		b.Run("impl="+impl.name, func(b *testing.B) {
			peerRun(b, impl, "lock-contended", "ops/s", "clients="+strconv.Itoa(clients))
		})
	}
}

// The uncontended cycle of zkgen and of go-zookeeper's zk.Lock, alternated
// in blocks of pairedBlock cycles within one run, so that both meet the
// same machine load (on a shared machine the load drifts between the
// sub-benchmarks of LockUncontended, which run one after the other). b.N
// cycles of each; it reports each one's time per cycle and the speed-up
// over zk.Lock (zk.Lock's time over zkgen's).
func BenchmarkLockUncontendedPaired(b *testing.B) {
	pz, pathZ := setup(b)
	pg, pathG := setup(b)
	ls := []locker{impls[0].new(b, pz.Addr(), pathZ), impls[2].new(b, pg.Addr(), pathG)}
	for _, l := range ls {
		if err := l.lock(); err != nil {
			b.Fatal(err)
		}
		if err := l.unlock(); err != nil {
			b.Fatal(err)
		}
	}
	var spent [2]time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += pairedBlock {
		n := min(pairedBlock, b.N-done)
		for k, l := range ls {
			start := time.Now()
			for i := 0; i < n; i++ {
				if err := l.lock(); err != nil {
					b.Fatal(err)
				}
				if err := l.unlock(); err != nil {
					b.Fatal(err)
				}
			}
			spent[k] += time.Since(start)
		}
	}
	b.StopTimer()
	perCycle := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(perCycle(spent[0]), "zkgen-µs/cycle")
	b.ReportMetric(perCycle(spent[1]), "gozk-µs/cycle")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "x-zk.Lock")
}

// pairedBlock is the number of cycles of one impl between switches in
// BenchmarkLockUncontendedPaired.
const pairedBlock = 25
