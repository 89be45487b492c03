package interop_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
)

// The generated example's handles (generated_example/coord) beside the real
// peers, on the example's own paths: the election scheduler with Curator
// LeaderLatch, python_scheduler with kazoo Election, python_slots (3
// leases) with kazoo Semaphore, hits with Curator DistributedAtomicLong and
// python_hits with kazoo Counter and Curator SharedCount — at most one
// leader, at most 3 holders, and counters that add up.
func TestGeneratedExampleWithPeers(t *testing.T) {
	srv := server(t)
	cur, kz := curator(t), kazoo(t)
	ctx := testCtx(t, 3*time.Minute)
	const cycles = 10
	clients := make([]*coord.Client, 2)
	for i := range clients {
		clients[i] = coord.New(connect(t, srv))
	}
	peer := func(name string, roles ...string) peerArgs {
		return peerArgs{zk: srv.Servers(), name: name, roles: roles, cycles: cycles, holdX: time.Millisecond, leases: 3}
	}
	goes := func(role string, section func(c *coord.Client, who string) section) []goContender {
		var out []goContender
		for i, c := range clients {
			who := fmt.Sprintf("go%d-%s", i, role)
			mode := map[string]string{"e": "x", "s": "s", "c": "r"}[role]
			out = append(out, goContender{who: who, lock: section(c, who), mode: mode, cycles: cycles, hold: time.Millisecond})
		}
		return out
	}

	t.Run("scheduler with Curator", func(t *testing.T) {
		g := goes("e", func(c *coord.Client, who string) section {
			return &electionSection[coord.Member]{e: c.Scheduler(), payload: coord.Member{Host: who}}
		})
		mixed(t, ctx, clients[0].Scheduler().Path(), 0, g, []peerStart{{peer("curator", "e", "e"), cur.start}})
	})
	t.Run("python_scheduler with kazoo", func(t *testing.T) {
		g := goes("e", func(c *coord.Client, who string) section {
			return &electionSection[string]{e: c.PythonScheduler(), payload: who}
		})
		mixed(t, ctx, clients[0].PythonScheduler().Path(), 0, g, []peerStart{{peer("kazoo", "e", "e"), kz.start}})
	})
	t.Run("python_slots with kazoo", func(t *testing.T) {
		g := goes("s", func(c *coord.Client, _ string) section { return &semaphoreSection{m: c.PythonSlots()} })
		p := peer("kazoo", "s", "s")
		p.holdX = 20 * time.Millisecond // long enough for holders to overlap
		for i := range g {
			g[i].hold = p.holdX
		}
		st, _ := mixed(t, ctx, clients[0].PythonSlots().Path(), 3, g, []peerStart{{p, kz.start}})
		t.Logf("most holders at once: %d of 3", st.maxS)
	})
	counter := func(t *testing.T, k runtime.CounterHandle, g []goContender, starts []peerStart) {
		st, _ := mixed(t, ctx, k.Path(), 0, g, starts)
		if n, err := k.Get(ctx); err != nil || n != int64(st.total) {
			t.Errorf("counter %d, %v after %d adds", n, err, st.total)
		}
	}
	t.Run("hits with Curator", func(t *testing.T) {
		g := goes("c", func(c *coord.Client, _ string) section { return counterSection{k: c.Hits()} })
		counter(t, clients[0].Hits(), g, []peerStart{{peer("curator", "a", "a"), cur.start}})
	})
	t.Run("python_hits with kazoo and Curator", func(t *testing.T) {
		g := goes("c", func(c *coord.Client, _ string) section { return counterSection{k: c.PythonHits()} })
		counter(t, clients[0].PythonHits(), g, []peerStart{{peer("kazoo", "c", "c"), kz.start}, {peer("curator", "k"), cur.start}})
	})
}
