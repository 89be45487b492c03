package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// One two-phase commit round per iteration with 3 participants, each on
// its own session, and a coordinator on a fourth: Propose, 3 Joins and
// commit Votes (concurrently), the coordinator's Outcome. Removing the
// transaction is outside the timing and the wire counts.
func BenchmarkTwoPC3(b *testing.B) {
	parts := []runtime.Participant{"p0", "p1", "p2"}
	p, path := setup(b)
	ctx := context.Background()
	cs := session(b, p.Addr())
	ss := make([]*runtime.Session, len(parts))
	for i := range ss {
		ss[i] = session(b, p.Addr())
	}
	m := &meter{p: p}
	lat := make([]time.Duration, 0, b.N)
	// round runs one transaction; i < 0 is the warm-up creating the parents.
	round := func(i int) *runtime.TwoPhaseCommit[string] {
		tx := runtime.At(fmt.Sprintf("%s/tx%d", path, i+1))
		c := runtime.NewTwoPhaseCommit(cs, tx, runtime.StringCodec(), parts)
		m.start()
		t0 := time.Now()
		var wg sync.WaitGroup
		for k, pt := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := runtime.NewTwoPhaseCommit(ss[k], tx, runtime.StringCodec(), parts)
				if err := h.Join(ctx, pt); err != nil {
					b.Error(err)
					return
				}
				if err := h.Vote(ctx, pt, runtime.Commit); err != nil {
					b.Error(err)
				}
			}()
		}
		if err := c.Propose(ctx); err != nil {
			b.Fatal(err)
		}
		d, err := c.Outcome(ctx)
		if err != nil {
			b.Fatal(err)
		}
		wg.Wait()
		lat = append(lat, time.Since(t0))
		m.stop()
		if d != runtime.Commit {
			b.Fatalf("outcome %v, want commit", d)
		}
		return c
	}
	if err := round(-1).Remove(ctx); err != nil {
		b.Fatal(err)
	}
	*m, lat = meter{p: p}, lat[:0]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := round(i)
		b.StopTimer()
		if err := c.Remove(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	m.report(b, b.N)
	ms(b, percentile(lat, 0.5), "p50-ms")
}
