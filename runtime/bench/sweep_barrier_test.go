package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
)

// N waiters, each on its own session, wait on a raised barrier; a round
// measures from Lower (the last arrival: the controller) to the last
// waiter's Wait returning, once every waiter's watched read has been sent.
// p50-ms and p99-ms are over 10 rounds; req/op and notify/op are per waiter
// and round, the raise and lower included.
func BenchmarkSweepBarrier(b *testing.B) {
	sweep(b, "zkgen", sweepSizes([]int{8, 64, 256}, 1000), sweepBarrier)
}

func sweepBarrier(b *testing.B, n int) {
	const rounds = 10
	p, path := setup(b)
	ctx := context.Background()
	ctl := runtime.NewBarrier(session(b, p.Addr()), runtime.At(path))
	ws := make([]*runtime.Barrier, n)
	for i, s := range sessions(b, p.Addr(), n) {
		ws[i] = runtime.NewBarrier(s, runtime.At(path))
	}
	if err := ctl.Raise(ctx); err != nil { // parents, outside the counts
		b.Fatal(err)
	}
	if err := ctl.Lower(ctx); err != nil {
		b.Fatal(err)
	}
	m := newWireMeter(p)
	lat := &durations{}
	b.ResetTimer()
	for b.Loop() {
		for range rounds {
			m.start()
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
			// Every waiter's read sent: Wait offers no signal of its
			// watch being set, the proxy's count is the only one.
			for p.Counts().Total() < before+int64(n) {
				time.Sleep(100 * time.Microsecond)
			}
			t0 := time.Now()
			if err := ctl.Lower(ctx); err != nil {
				b.Fatal(err)
			}
			wg.Wait()
			lat.add(time.Since(t0))
			m.stop()
		}
	}
	b.StopTimer()
	m.report(b, rounds*n*b.N, "")
	lat.report(b, "")
}

// N participants, each on its own session, go through a double barrier of
// size N on a fresh path per round. N-1 enter first; once an observer (a
// direct connection, outside the counts) sees their N-1 nodes, the last
// enters. p50-ms and p99-ms are from the last Enter call to every Enter
// returned; leave-p50-ms from all calling Leave at once to every Leave
// returned. req/op and notify/op are per participant and round, Enter and
// Leave together. 5 rounds.
func BenchmarkSweepDoubleBarrier(b *testing.B) {
	sweep(b, "zkgen", sweepSizes([]int{8, 64, 256}, 1000), sweepDoubleBarrier)
}

func sweepDoubleBarrier(b *testing.B, n int) {
	const rounds = 5
	p, path := setup(b)
	ctx := context.Background()
	ss := sessions(b, p.Addr(), n)
	obs := gozk(b, shared.Addr())
	m := newWireMeter(p)
	enter, leave := &durations{}, &durations{}
	round := 0
	b.ResetTimer()
	for b.Loop() {
		for range rounds {
			round++
			dir := fmt.Sprintf("%s/r%d", path, round)
			ds := make([]*runtime.DoubleBarrier, n)
			for i, s := range ss {
				ds[i] = runtime.NewDoubleBarrier(s, runtime.At(dir), n)
			}
			m.start()
			c0 := p.Counts()
			var wg sync.WaitGroup
			done := make(chan time.Time, n)
			for _, d := range ds[:n-1] {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := d.Enter(ctx); err != nil {
						b.Error(err)
					}
					done <- time.Now()
				}()
			}
			if err := waitParticipants(obs, dir, n-1); err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			if err := ds[n-1].Enter(ctx); err != nil {
				b.Fatal(err)
			}
			last := time.Now()
			wg.Wait()
			for range n - 1 {
				last = later(last, <-done)
			}
			enter.add(last.Sub(t0))
			opsSince(b, p, c0, n)
			c0 = p.Counts()
			t0 = time.Now()
			for _, d := range ds {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := d.Leave(ctx); err != nil {
						b.Error(err)
					}
				}()
			}
			wg.Wait()
			leave.add(time.Since(t0))
			opsSince(b, p, c0, n)
			m.stop()
		}
	}
	b.StopTimer()
	m.report(b, rounds*n*b.N, "")
	enter.report(b, "")
	leave.mu.Lock()
	ms(b, percentile(leave.ds, 0.5), "leave-p50-ms")
	leave.mu.Unlock()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// waitParticipants blocks until dir has at least want participant nodes,
// on children watches (an exists watch while dir is missing).
func waitParticipants(c *zk.Conn, dir string, want int) error {
	for {
		kids, _, ch, err := c.ChildrenW(dir)
		if err == zk.ErrNoNode {
			ok, _, ech, err := c.ExistsW(dir)
			if err != nil {
				return err
			}
			if !ok {
				<-ech
			}
			continue
		}
		if err != nil {
			return err
		}
		k := 0
		for _, name := range kids {
			if strings.Contains(name, "-p-") {
				k++
			}
		}
		if k >= want {
			return nil
		}
		<-ch
	}
}
