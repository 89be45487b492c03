package bench

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

const candidates = 8

// Eight candidates, each on its own session; each iteration closes the
// leader's session and measures the time until the next candidate's
// Campaign returns (its acknowledgement written). A replacement candidate
// joins, outside the timing, so eight stay in line. Reports the p50 and p90
// failover in ms and the wire counts of the failover itself. The peers
// (peers_test.go) do the same with Curator's LeaderLatch (until the next
// latch's isLeader) and kazoo's Election (until the next candidate's
// function runs).
func BenchmarkElectionFailover8(b *testing.B) {
	b.Run("impl=zkgen", electionFailover8)
	for _, impl := range peers {
		b.Run("impl="+impl.name, func(b *testing.B) { peerFailover(b, impl, candidates) })
	}
}

func electionFailover8(b *testing.B) {
	p, path := setup(b)
	direct := gozk(b, zktest.Shared(b, shared, sharedErr).Addr()) // uncounted, to see the line
	type elected struct {
		s  *runtime.Session
		at time.Time
	}
	leaders := make(chan elected, candidates)
	var over atomic.Bool // the sessions close after the benchmark: no errors then
	defer over.Store(true)
	add := func() {
		s := session(b, p.Addr())
		campaign(b, s, path, &over, func(at time.Time) {
			select {
			case leaders <- elected{s, at}:
			default: // elected while the sessions close at the end
			}
		})
	}
	for i := 0; i < candidates; i++ {
		add()
	}
	leader := <-leaders
	inLine(b, direct, path, "latch-", candidates)
	m := &meter{p: p}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.start()
		t0 := time.Now()
		leader.s.Close()
		leader = <-leaders
		lat = append(lat, leader.at.Sub(t0))
		m.stop()
		b.StopTimer()
		add()
		inLine(b, direct, path, "latch-", candidates)
		b.StartTimer()
	}
	b.StopTimer()
	leader.s.Close()
	m.report(b, b.N)
	ms(b, percentile(lat, 0.5), "p50-ms")
	ms(b, percentile(lat, 0.9), "p90-ms")
}

// campaign starts a candidate on s for the election at path; elected is
// called with the time its Campaign returned. An error other than the
// session's close fails b, unless over is set (the sessions closing at the
// end).
func campaign(b *testing.B, s *runtime.Session, path string, over *atomic.Bool, elected func(at time.Time)) {
	e := runtime.NewElection(s, runtime.At(path), runtime.StringCodec())
	go func() {
		_, err := e.Campaign(context.Background(), "candidate")
		if err != nil {
			if !errors.Is(err, runtime.ErrClosed) && !over.Load() {
				b.Error(err)
			}
			return
		}
		elected(time.Now())
	}()
}
