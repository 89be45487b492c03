package bench

import (
	"context"
	"fmt"
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

// Four producers put 2000 items (Put, one at a time, 500 each) into a queue
// already holding N items, then four consumers take 2000 (Take), each on its
// own session, so the depth stays between N and N+2000. put-items/sec and
// take-items/sec are each phase's throughput, items/sec both phases';
// req/op and notify/op are per item put and taken, and put-req/op,
// take-req/op, take-notify/op each phase's share. Items are JSON of 256
// bytes. The preload (PutAll) is outside the timing and the counts. A
// server of its own, with a 1 GiB heap (6 GiB with ZKGEN_SWEEP_FULL=1's
// 1,000,000 items).
func BenchmarkSweepQueue(b *testing.B) {
	sizes := sweepSizes([]int{1000, 10_000, 100_000}, 1_000_000)
	srv := queueSweepServer(b, sizes)
	sweep(b, "zkgen", sizes, func(b *testing.B, n int) {
		p := zktest.NewProxy(b, srv.Addr())
		path := fmt.Sprintf("/sweep/queue-%d", seq.Add(1))
		var qs []*runtime.Queue[[]byte]
		for _, s := range sessions(b, p.Addr(), producers+consumers) {
			qs = append(qs, runtime.NewQueue(s, runtime.At(path), runtime.BytesCodec()))
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
	})
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
// sweepQueueItems items, and reports.
func queueSweep(b *testing.B, p *zktest.Proxy, n int, q queueOps) {
	ctx := context.Background()
	if err := q.preload(ctx, n); err != nil {
		b.Fatal(err)
	}
	pm, tm := &meter{p: p}, &meter{p: p}
	var putTime, takeTime time.Duration
	// phase runs fn on 4 workers, sweepQueueItems/4 calls each.
	phase := func(m *meter, fn func(w, k int) error) time.Duration {
		m.start()
		t0 := time.Now()
		var wg sync.WaitGroup
		for w := range producers {
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
		wg.Wait()
		d := time.Since(t0)
		m.stop()
		return d
	}
	b.ResetTimer()
	for b.Loop() {
		putTime += phase(pm, func(w, k int) error { return q.put(ctx, w, k) })
		takeTime += phase(tm, func(w, _ int) error { return q.take(ctx, w) })
	}
	b.StopTimer()
	items := float64(sweepQueueItems * b.N)
	b.ReportMetric(2*items/(putTime+takeTime).Seconds(), "items/sec")
	b.ReportMetric(items/putTime.Seconds(), "put-items/sec")
	b.ReportMetric(items/takeTime.Seconds(), "take-items/sec")
	b.ReportMetric(float64(pm.req+tm.req)/items, "req/op")
	b.ReportMetric(float64(pm.notify+tm.notify)/items, "notify/op")
	b.ReportMetric(float64(pm.req)/items, "put-req/op")
	b.ReportMetric(float64(tm.req)/items, "take-req/op")
	b.ReportMetric(float64(tm.notify)/items, "take-notify/op")
}
