package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// jobPayload is a job description as a service would queue it: JSON of
// about 256 bytes.
var jobPayload = []byte(`{"id":"job-7f3c9a2e-41d8-4b6a-9c1e-5d2f8b7a6e10","tenant":"acme-industries","kind":"thumbnail","created":"2026-11-23T06:50:12.345Z","attempt":0,"input":"s3://media-eu-west-1/uploads/2026/11/23/IMG_4821.jpg","params":{"width":640,"height":480,"format":"webp","quality":82}}`)

// sweepQueueItems is the number of items put and then taken per round.
const sweepQueueItems = 2000

// queueSweepServer starts a server of its own for a queue sweep, with a heap
// for depth items of jobPayload (ZooKeeper keeps every node in memory).
func queueSweepServer(b *testing.B, sizes []int) *zktest.Server {
	heap := 1024
	if slicesMax(sizes) > 100_000 {
		heap = 6144
	}
	return zktest.Start(b, zktest.WithHeapMB(heap))
}

func slicesMax(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// queueOps is one queue implementation under the queue sweep: preload puts
// n items (batched, outside the counts), put puts one item from producer i,
// take takes one item from consumer j.
type queueOps struct {
	preload func(ctx context.Context, n int) error
	put     func(ctx context.Context, i, k int) error
	take    func(ctx context.Context, j int) error
}

// Four producers and four consumers, each on its own session, on a queue
// already holding N items: they put and take 2000 items at once (Put and
// Take, one item each; items/sec, and req/op and notify/op per item put and
// taken), then the producers put 2000 alone (put-items/sec, put-req/op),
// then the consumers take 2000 alone (take-items/sec, take-req/op,
// take-notify/op), so the depth stays between N and N+2000. Items are JSON
// of 256 bytes. impl=zkgen-prefetch16 is the same queue with
// WithPrefetch(16). kazoo's Queue (impl=kazoo) runs the first phase, its
// driver preloading the same depth and item size (Curator's driver has no
// preload: a DistributedQueue's consumers drain a preload at once). The preload (PutAll) is outside the timing and the counts. A
// server of its own, with a 1 GiB heap (6 GiB with ZKGEN_SWEEP_FULL=1's
// 1,000,000 items).
func BenchmarkSweepQueue(b *testing.B) {
	sizes := sweepSizes([]int{1000, 10_000, 100_000}, 1_000_000)
	srv := queueSweepServer(b, sizes)
	zkgen := func(opts ...runtime.QueueOption) func(b *testing.B, n int) {
		return func(b *testing.B, n int) {
			p := zktest.NewProxy(b, srv.Addr())
			path := fmt.Sprintf("/sweep/queue-%d", seq.Add(1))
			var qs []*runtime.Queue[[]byte]
			for _, s := range sessions(b, p.Addr(), producers+consumers) {
				qs = append(qs, runtime.NewQueue(s, runtime.At(path), runtime.BytesCodec(), opts...))
			}
			queueSweep(b, p, n, queueOps{
				preload: func(ctx context.Context, n int) error {
					return preloadBatches(n, func(k int) error {
						_, err := qs[0].PutAll(ctx, repeat(jobPayload, k))
						return err
					})
				},
				put: func(ctx context.Context, i, _ int) error { return qs[i].Put(ctx, jobPayload) },
				take: func(ctx context.Context, j int) error {
					_, err := qs[producers+j].Take(ctx)
					return err
				},
			})
		}
	}
	sweep(b, "zkgen", sizes, zkgen())
	sweep(b, "zkgen-prefetch16", sizes, zkgen(runtime.WithPrefetch(16)))
	sweep(b, "kazoo", sizes, func(b *testing.B, n int) { peerQueueSweep(b, peerNamed("kazoo"), srv, n) })
}

// The same for a priority queue of 3 levels: the preload spread evenly over
// the levels, producers putting at levels 0, 1, 2 in turn.
func BenchmarkSweepPriorityQueue(b *testing.B) {
	const levels = 3
	sizes := sweepSizes([]int{1000, 10_000, 100_000}, 1_000_000)
	srv := queueSweepServer(b, sizes)
	sweep(b, "zkgen", sizes, func(b *testing.B, n int) {
		p := zktest.NewProxy(b, srv.Addr())
		path := fmt.Sprintf("/sweep/pqueue-%d", seq.Add(1))
		var qs []*runtime.PriorityQueue[[]byte]
		for _, s := range sessions(b, p.Addr(), producers+consumers) {
			qs = append(qs, runtime.NewPriorityQueue(s, runtime.At(path), runtime.BytesCodec(), levels))
		}
		queueSweep(b, p, n, queueOps{
			preload: func(ctx context.Context, n int) error {
				lvl := 0
				return preloadBatches(n, func(k int) error {
					lvl = (lvl + 1) % levels
					_, err := qs[0].PutAll(ctx, runtime.Priority(lvl), repeat(jobPayload, k))
					return err
				})
			},
			put: func(ctx context.Context, i, k int) error {
				return qs[i].Put(ctx, runtime.Priority(k%levels), jobPayload)
			},
			take: func(ctx context.Context, j int) error {
				_, err := qs[producers+j].Take(ctx)
				return err
			},
		})
	})
}

// preloadBatches calls put with batches of up to 1000 items until n are put.
func preloadBatches(n int, put func(k int) error) error {
	for n > 0 {
		k := min(n, 1000)
		if err := put(k); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

func repeat(v []byte, k int) [][]byte {
	out := make([][]byte, k)
	for i := range out {
		out[i] = v
	}
	return out
}

// queueSweep preloads n items, then per round puts and takes
// sweepQueueItems items three times: producers and consumers at once
// (items/sec, req/op, notify/op, as the peers run it), producers alone
// (put-), consumers alone (take-).
func queueSweep(b *testing.B, p *zktest.Proxy, n int, q queueOps) {
	ctx := context.Background()
	if err := q.preload(ctx, n); err != nil {
		b.Fatal(err)
	}
	bm, pm, tm := newWireMeter(p), newWireMeter(p), newWireMeter(p)
	var bothTime, putTime, takeTime time.Duration
	// phase runs put on producers workers and take on consumers workers,
	// sweepQueueItems calls of each in all.
	phase := func(m *wireMeter, put, take bool) time.Duration {
		m.start()
		t0 := time.Now()
		var wg sync.WaitGroup
		run := func(w int, fn func(w, k int) error) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range share(sweepQueueItems, producers, w) {
					if err := fn(w, k); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		for w := range producers {
			if put {
				run(w, func(w, k int) error { return q.put(ctx, w, k) })
			}
			if take {
				run(w, func(w, _ int) error { return q.take(ctx, w) })
			}
		}
		wg.Wait()
		d := time.Since(t0)
		m.stop()
		return d
	}
	b.ResetTimer()
	for b.Loop() {
		bothTime += phase(bm, true, true)
		putTime += phase(pm, true, false)
		c0 := p.Counts()
		takeTime += phase(tm, false, true)
		opsSince(b, p, c0, sweepQueueItems)
	}
	b.StopTimer()
	items := float64(sweepQueueItems * b.N)
	b.ReportMetric(float64(bothTime.Nanoseconds())/items, "ns/op")
	b.ReportMetric(items/bothTime.Seconds(), "items/sec")
	bm.report(b, int(items), "")
	b.ReportMetric(items/putTime.Seconds(), "put-items/sec")
	b.ReportMetric(items/takeTime.Seconds(), "take-items/sec")
	pm.report(b, int(items), "put-")
	tm.report(b, int(items), "take-")
}

// peerQueueSweep runs impl's queue workload (producers and consumers at
// once) on a queue its driver preloads with n items of jobPayload's size,
// through a proxy to srv: one round of sweepQueueItems items, reported as
// queueSweep's first phase.
func peerQueueSweep(b *testing.B, impl *peerImpl, srv *zktest.Server, n int) {
	p := zktest.NewProxy(b, srv.Addr())
	path := fmt.Sprintf("/sweep/%s-queue-%d", impl.name, seq.Add(1))
	d := startDriver(b, impl, p, path, "queue", "n="+strconv.Itoa(sweepQueueItems),
		"depth="+strconv.Itoa(n), "item_bytes="+strconv.Itoa(len(jobPayload)))
	d.ready()
	m := newWireMeter(p)
	b.ResetTimer()
	m.start()
	elapsed, k := d.round()
	m.stop()
	b.StopTimer()
	if k != sweepQueueItems {
		b.Fatalf("%s did %d items, want %d", d.name, k, sweepQueueItems)
	}
	m.report(b, sweepQueueItems, "")
	b.ReportMetric(float64(sweepQueueItems)/elapsed.Seconds(), "items/sec")
	b.ReportMetric(float64(elapsed.Nanoseconds())/sweepQueueItems, "ns/op")
	d.finish()
}

// peerNamed returns the peer called name.
func peerNamed(name string) *peerImpl {
	for _, p := range peers {
		if p.name == name {
			return p
		}
	}
	panic("no peer " + name)
}
