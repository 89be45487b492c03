package bench

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

const (
	producers = 4
	consumers = 4
	batch     = 16 // items per PutAll / TakeN in the batched variants
)

var payload = []byte("0123456789abcdef")

// itemSizes are the item sizes of the queue benchmarks: JSON jobs of tens
// to thousands of bytes, as users send them.
var itemSizes = []int{32, 256, 1024, 4096}

// jsonItem is a JSON item of exactly size bytes (at least 18), the same
// bytes the peers' drivers put for item_bytes=size: {"i":"000001","p":"xx…"}.
func jsonItem(size int) []byte {
	head := `{"i":"000001","p":"`
	return []byte(head + strings.Repeat("x", max(0, size-len(head)-2)) + `"}`)
}

// share splits n items among k workers.
func share(n, k, i int) int { return n/k + btoi(i < n%k) }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// queueRun runs producers and consumers, each on its own session, until
// b.N items are put and taken, and reports items/sec, req/op and notify/op
// per item. put(i, n) puts n items from producer i; take(j, ctx) takes from
// consumer j and returns how many it got. The consumers' ctx is cancelled
// once every item is taken.
func queueRun(b *testing.B, put func(i, n int) error, take func(j int, ctx context.Context) (int, error)) {
	var taken atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < producers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := put(i, share(b.N, producers, i)); err != nil {
				b.Error(err)
			}
		}()
	}
	for j := 0; j < consumers; j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for taken.Load() < int64(b.N) {
				n, err := take(j, ctx)
				if taken.Add(int64(n)) >= int64(b.N) {
					cancel()
				}
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						b.Error(err)
						cancel()
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if got := taken.Load(); got != int64(b.N) {
		b.Fatalf("took %d items, want %d", got, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "items/sec")
}

// queues opens the producers' and consumers' handles on one fresh queue;
// done reports the wire counts.
func queues(b *testing.B, item []byte, opts ...runtime.QueueOption) (put, take []*runtime.Queue[[]byte], done func()) {
	px, path := setup(b)
	for i := 0; i < producers; i++ {
		put = append(put, runtime.NewQueue(session(b, px.Addr()), runtime.At(path), runtime.BytesCodec(), opts...))
	}
	for j := 0; j < consumers; j++ {
		take = append(take, runtime.NewQueue(session(b, px.Addr()), runtime.At(path), runtime.BytesCodec(), opts...))
	}
	ctx := context.Background()
	if err := put[0].Put(ctx, item); err != nil { // parents, outside the timing
		b.Fatal(err)
	}
	if _, err := take[0].Take(ctx); err != nil {
		b.Fatal(err)
	}
	px.ResetCounts()
	return put, take, func() { report(b, px, b.N) }
}

// Four producers and four consumers on separate sessions, one item per
// Put and per Take; b.N items in total (the peers' table: 2000), for each
// item size. The peers (peers_test.go) run the same: Curator's
// DistributedQueue, kazoo's Queue, with the same items.
func BenchmarkQueue4P4C(b *testing.B) {
	for _, size := range itemSizes {
		b.Run("size="+strconv.Itoa(size), func(b *testing.B) {
			b.Run("impl=zkgen", func(b *testing.B) { queue4P4C(b, jsonItem(size)) })
			b.Run("impl=zkgen-prefetch16", func(b *testing.B) { queue4P4C(b, jsonItem(size), runtime.WithPrefetch(16)) })
			for _, impl := range peers {
				b.Run("impl="+impl.name, func(b *testing.B) {
					peerRun(b, impl, "queue", "items/sec", "producers="+strconv.Itoa(producers),
						"consumers="+strconv.Itoa(consumers), "item_bytes="+strconv.Itoa(size))
				})
			}
		})
	}
}

func queue4P4C(b *testing.B, item []byte, opts ...runtime.QueueOption) {
	slowQueue4P4C(b, item, 0, opts...)
}

// slowQueue4P4C is queue4P4C with the first consumer spending work on each
// item (slowOneByOne).
func slowQueue4P4C(b *testing.B, item []byte, work time.Duration, opts ...runtime.QueueOption) {
	px, path := setup(b)
	slowOneByOne(b, px, func(s *runtime.Session) ends {
		q := runtime.NewQueue(s, runtime.At(path), runtime.BytesCodec(), opts...)
		return ends{
			put:  func(ctx context.Context, _ int) error { return q.Put(ctx, item) },
			take: func(ctx context.Context) (int, error) { _, err := q.Take(ctx); return took(err) },
		}
	}, work)
}

// ends is one session's end of a queue in the 4P/4C workloads: put puts
// the k-th item of its producer, take takes one item (and acks it) and
// says how many it took.
type ends struct {
	put  func(ctx context.Context, k int) error
	take func(ctx context.Context) (int, error)
}

// took is a take's count: 1 unless it failed.
func took(err error) (int, error) {
	if err != nil {
		return 0, err
	}
	return 1, nil
}

// oneByOne runs the 4P/4C workload of one item per Put and per Take on
// the ends open makes, each on a session of its own through px: a first
// put and take outside the timing (they make the parents), then b.N
// items, and the wire counts.
func oneByOne(b *testing.B, px *zktest.Proxy, open func(*runtime.Session) ends) {
	slowOneByOne(b, px, open, 0)
}

// slowOneByOne is oneByOne with the first consumer spending work on each
// item it takes before it takes the next (0: none). The work is cut short
// once every item is taken: the drain time ends with the last Take, as
// the peers' drivers time it.
func slowOneByOne(b *testing.B, px *zktest.Proxy, open func(*runtime.Session) ends, work time.Duration) {
	var put, take []ends
	for range producers {
		put = append(put, open(session(b, px.Addr())))
	}
	for range consumers {
		take = append(take, open(session(b, px.Addr())))
	}
	bg := context.Background()
	if err := put[0].put(bg, 0); err != nil {
		b.Fatal(err)
	}
	if _, err := take[0].take(bg); err != nil {
		b.Fatal("first item: ", err)
	}
	px.ResetCounts()
	b.ReportAllocs()
	slowHas := false // only consumer 0's goroutine uses it
	queueRun(b, func(i, n int) error {
		for k := 0; k < n; k++ {
			if err := put[i].put(bg, k); err != nil {
				return err
			}
		}
		return nil
	}, func(j int, ctx context.Context) (int, error) {
		if j == 0 && work > 0 && slowHas {
			select {
			case <-time.After(work):
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		n, err := take[j].take(ctx)
		if j == 0 {
			slowHas = n > 0
		}
		return n, err
	})
	report(b, px, b.N)
}

// slowWork is the slow consumer's work per item in Queue4P4CSlow.
const slowWork = 150 * time.Millisecond

// Queue4P4C with one slow consumer among the four: it spends slowWork on
// each item it takes before it takes the next, the other three none; b.N
// items (2000 in BENCHMARKS.md) of 256 bytes, timed until the last is
// taken. kazoo's Queue runs the same, its first consumer sleeping slowWork
// after each get. work=0s is the same run without the slow consumer.
func BenchmarkQueue4P4CSlow(b *testing.B) {
	const size = 256
	for _, work := range []time.Duration{0, slowWork} {
		b.Run("work="+work.String(), func(b *testing.B) {
			b.Run("impl=zkgen", func(b *testing.B) { slowQueue4P4C(b, jsonItem(size), work) })
			for _, impl := range peers {
				if impl.name != "kazoo" {
					continue
				}
				b.Run("impl="+impl.name, func(b *testing.B) {
					peerRun(b, impl, "queue", "items/sec", "producers="+strconv.Itoa(producers),
						"consumers="+strconv.Itoa(consumers), "item_bytes="+strconv.Itoa(size),
						"slow_ms="+strconv.FormatInt(work.Milliseconds(), 10))
				})
			}
		})
	}
}

// The same with PutAll and TakeN of up to 16 items.
func BenchmarkQueue4P4CBatched(b *testing.B) {
	put, take, done := queues(b, payload)
	bg := context.Background()
	b.ReportAllocs()
	queueRun(b, func(i, n int) error {
		items := make([][]byte, batch)
		for i := range items {
			items[i] = payload
		}
		for n > 0 {
			k := min(n, batch)
			if _, err := put[i].PutAll(bg, items[:k]); err != nil {
				return err
			}
			n -= k
		}
		return nil
	}, func(j int, ctx context.Context) (int, error) {
		vs, err := take[j].TakeN(ctx, batch)
		return len(vs), err
	})
	done()
}

// A priority queue of 3 levels, four producers (putting at levels 0, 1, 2
// in turn) and four consumers on separate sessions; b.N items in total, for
// each item size. kind=delay is a delay queue whose items are due when put
// (the cost of the kind itself, not of waiting). kind=fifo is Queue4P4C's
// zkgen run (no prefetch), in the same run for comparison.
func BenchmarkPriorityQueue4P4C(b *testing.B) {
	for _, size := range itemSizes {
		b.Run("size="+strconv.Itoa(size), func(b *testing.B) {
			b.Run("kind=priority", func(b *testing.B) { priorityQueue4P4C(b, jsonItem(size)) })
			b.Run("kind=delay", func(b *testing.B) { delayQueue4P4C(b, jsonItem(size)) })
			b.Run("kind=fifo", func(b *testing.B) { queue4P4C(b, jsonItem(size)) })
		})
	}
}

func delayQueue4P4C(b *testing.B, payload []byte) {
	px, path := setup(b)
	oneByOne(b, px, func(s *runtime.Session) ends {
		q := runtime.NewDelayQueue(s, runtime.At(path), runtime.BytesCodec())
		return ends{
			put:  func(ctx context.Context, _ int) error { return q.Put(ctx, payload, time.Now()) },
			take: func(ctx context.Context) (int, error) { _, err := q.Take(ctx); return took(err) },
		}
	})
}

func priorityQueue4P4C(b *testing.B, payload []byte) {
	const levels = 3
	px, path := setup(b)
	oneByOne(b, px, func(s *runtime.Session) ends {
		q := runtime.NewPriorityQueue(s, runtime.At(path), runtime.BytesCodec(), levels)
		return ends{
			put:  func(ctx context.Context, k int) error { return q.Put(ctx, runtime.Priority(k%levels), payload) },
			take: func(ctx context.Context) (int, error) { _, err := q.Take(ctx); return took(err) },
		}
	})
}
