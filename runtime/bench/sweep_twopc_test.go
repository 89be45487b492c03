package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// One two-phase commit round per step with N participants, each on its own
// session, and a coordinator on another: Propose, N Joins and commit Votes
// (concurrently), the coordinator's Outcome (notify "all", the default:
// only the coordinator calls Outcome here). p50-ms and p99-ms are the round
// times over 5 rounds, decide-p50-ms from the last Vote returning to
// Outcome returning (the coordinator's lag); req/op and notify/op are per
// participant and round, the coordinator's share included. Removing the transaction is outside
// the timing and the counts.
func BenchmarkSweepTwoPC(b *testing.B) {
	sweep(b, "zkgen", sweepSizes([]int{4, 16, 64}, 256), sweepTwoPC)
}

func sweepTwoPC(b *testing.B, n int) {
	const rounds = 5
	parts := make([]runtime.Participant, n)
	for i := range parts {
		parts[i] = runtime.Participant(fmt.Sprintf("p%d", i))
	}
	p, path := setup(b)
	ctx := context.Background()
	cs := session(b, p.Addr())
	ss := sessions(b, p.Addr(), n)
	m := newWireMeter(p)
	lat, lag := &durations{}, &durations{}
	tx := 0
	round := func(measure bool) {
		tx++
		at := runtime.At(fmt.Sprintf("%s/tx%d", path, tx))
		c := runtime.NewTwoPhaseCommit(cs, at, runtime.StringCodec(), parts)
		if measure {
			m.start()
		}
		t0 := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var lastVote time.Time
		for k, pt := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := runtime.NewTwoPhaseCommit(ss[k], at, runtime.StringCodec(), parts)
				if err := h.Join(ctx, pt); err != nil {
					b.Error(err)
					return
				}
				if err := h.Vote(ctx, pt, runtime.Commit); err != nil {
					b.Error(err)
				}
				mu.Lock()
				lastVote = later(lastVote, time.Now())
				mu.Unlock()
			}()
		}
		if err := c.Propose(ctx); err != nil {
			b.Fatal(err)
		}
		d, err := c.Outcome(ctx)
		if err != nil {
			b.Fatal(err)
		}
		decided := time.Now()
		wg.Wait()
		if measure {
			lat.add(time.Since(t0))
			lag.add(decided.Sub(lastVote))
			m.stop()
		}
		if d != runtime.Commit {
			b.Fatalf("outcome %v, want commit", d)
		}
		if err := c.Remove(ctx); err != nil {
			b.Fatal(err)
		}
	}
	round(false) // parents
	b.ResetTimer()
	for b.Loop() {
		for range rounds {
			round(true)
		}
	}
	b.StopTimer()
	m.report(b, rounds*n*b.N, "")
	lat.report(b, "")
	lag.mu.Lock()
	ms(b, percentile(lag.ds, 0.5), "decide-p50-ms")
	lag.mu.Unlock()
}
