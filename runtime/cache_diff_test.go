package runtime_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// TestCacheDifferential: the same seeded random operations and faults run
// against a real ZooKeeper and against the simulator (zkgen sim), each
// with a cache of /{svc}/{shard:int} run under Supervise through a proxy.
// The writer creates, sets and deletes instances, nodes below instances,
// nodes the template refuses (a shard "07") and whole services; between
// batches the proxy cuts the cache's connection (the next batch written
// while the cache reconnects, or before it can) or its session is expired
// (the next batch written while it has none). At every quiet
// point (the end of a batch) the cache, once synced, must hold exactly
// what a direct listing of the tree gives; and the two backends must
// agree at every quiet point. Both watch modes (persistent, one-shot). ZKGEN_CACHE_DIFF_SEEDS sets the number of
// seeds (default 2), ZKGEN_CACHE_DIFF_SEED the first (default 1).
func TestCacheDifferential(t *testing.T) {
	real := server(t)
	seeds, first := envInt("ZKGEN_CACHE_DIFF_SEEDS", 2), envInt("ZKGEN_CACHE_DIFF_SEED", 1)
	bothModes(t, func(t *testing.T, opts ...runtime.CacheOption) {
		for seed := first; seed < first+seeds; seed++ {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				onReal := cacheDiffRun(t, real.Addr(), uint64(seed), opts...)
				onSim := cacheDiffRun(t, sim.Start(t).Addr(), uint64(seed), opts...)
				for i := range min(len(onReal), len(onSim)) {
					if !maps.Equal(onReal[i], onSim[i]) {
						t.Fatalf("quiet point %d: ZooKeeper's cache holds %v\nthe simulator's %v", i, onReal[i], onSim[i])
					}
				}
			})
		}
	})
}

// cacheDiffBatches is the number of batches of writes of a run, and
// cacheDiffOps the writes in each.
const cacheDiffBatches, cacheDiffOps = 12, 12

// cacheDiffRun runs seed's operations against the server at addr and
// returns the cache's contents (paths below the run's root) at each quiet
// point, each checked against a direct listing.
func cacheDiffRun(t *testing.T, addr string, seed uint64, opts ...runtime.CacheOption) []map[string]string {
	ctx := testCtx(t, 3*time.Minute)
	p, w := zktest.NewProxy(t, addr), connect(t, []string{addr})
	root := testRoot(t)
	makeDirs(t, w, "/zkgen-test", root)
	c := newStrCache(t, runtime.TemplateAt(root).Str("svc").Int("shard"), opts...)
	sessions, _ := superviseCache(t, ctx, c, p)
	cur := <-sessions
	rng := rand.New(rand.NewPCG(seed, 45))
	var out []map[string]string
	for b := 0; b < cacheDiffBatches; b++ {
		paused := false
		switch f := rng.IntN(5); {
		case b > 0 && f <= 1: // the batch is written during the reconnection, or before
			paused = f == 1
			p.Pause(paused)
			p.CutAll()
		case b > 0 && f == 2: // the batch is written while the cache has no session
			paused = true
			p.Pause(true) // the client must not reattach while it is expired
			expireViaProxy(t, p, []string{addr}, cur.ID())
		}
		for range cacheDiffOps {
			cacheDiffOp(t, w, rng, root)
		}
		if paused {
			p.Pause(false)
		}
		if err := c.Sync(ctx); err != nil {
			t.Fatalf("batch %d: Sync: %v", b, err)
		}
		got, want := contents(t, c), listInstances(t, w, root)
		if !maps.Equal(got, want) {
			t.Fatalf("seed %d, batch %d: the cache holds %v\nthe tree %v", seed, b, got, want)
		}
		out = append(out, relative(got, root))
		for len(sessions) > 0 {
			cur = <-sessions
		}
	}
	return out
}

// cacheDiffOp makes one random write below root.
func cacheDiffOp(t *testing.T, w *runtime.Session, rng *rand.Rand, root string) {
	t.Helper()
	svc := fmt.Sprintf("%s/svc-%d", root, rng.IntN(3))
	inst := fmt.Sprintf("%s/%d", svc, rng.IntN(5)-1) // -1 ... 3
	val := strconv.Itoa(rng.IntN(1000))
	switch k := rng.IntN(10); {
	case k < 5: // create or set an instance
		put(t, w, map[string]string{inst: val})
	case k < 7:
		deleteTree(t, w, inst)
	case k == 7: // below an instance, or a shard the template refuses
		put(t, w, map[string]string{[]string{inst + "/below", svc + "/07"}[rng.IntN(2)]: val})
	case k == 8:
		deleteTree(t, w, svc)
	default: // several writes in one transaction
		if _, err := w.Conn().Multi(&zk.CreateRequest{Path: svc, Acl: zk.WorldACL(zk.PermAll)},
			&zk.CreateRequest{Path: svc + "/9", Data: []byte(val), Acl: zk.WorldACL(zk.PermAll)}); err != nil &&
			!errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
}

// listInstances reads root/{svc}/{shard:int} directly: the contents a
// cache of that template must have.
func listInstances(t *testing.T, w *runtime.Session, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, svc := range childrenOf(t, w, root) {
		for _, shard := range childrenOf(t, w, root+"/"+svc) {
			if n, err := strconv.Atoi(shard); err != nil || strconv.Itoa(n) != shard {
				continue
			}
			p := root + "/" + svc + "/" + shard
			data, _, err := w.Conn().Get(p)
			if err != nil {
				t.Fatalf("get %s: %v", p, err)
			}
			out[p] = string(data)
		}
	}
	return out
}

// relative returns m with root taken off its keys.
func relative(m map[string]string, root string) map[string]string {
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out[strings.TrimPrefix(k, root)] = m[k]
	}
	return out
}

// envInt returns the environment variable name as an int, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}
