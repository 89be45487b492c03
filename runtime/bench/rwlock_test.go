package bench

import (
	"context"
	"testing"

	"github.com/zkgen/zkgen/runtime"
)

// Six reader sessions and two writer sessions share one read/write lock;
// b.N acquisitions (each acquire+release) in total.
func BenchmarkRWLockMixed6R2W(b *testing.B) {
	const readers, writers = 6, 2
	p, path := setup(b)
	ctx := context.Background()
	var sides []runtime.LockHandle
	for i := 0; i < readers+writers; i++ {
		rw := runtime.NewRWLock(session(b, p.Addr()), runtime.At(path))
		if i < readers {
			sides = append(sides, rw.Read())
		} else {
			sides = append(sides, rw.Write())
		}
	}
	for _, l := range []runtime.LockHandle{sides[0], sides[readers]} { // parents, outside the timing
		if err := l.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	p.ResetCounts()
	b.ReportAllocs()
	b.ResetTimer()
	runShared(b, sides, func(l runtime.LockHandle) error {
		if err := l.Lock(ctx); err != nil {
			return err
		}
		return l.Unlock(ctx)
	})
	b.StopTimer()
	report(b, p, b.N)
}
