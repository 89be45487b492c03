package bench

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// The sweeps of the recipes other than the lock, the election and the
// group (issue 21): each is BenchmarkSweep<Recipe>/impl=<impl>/n=<N> and
// reports its costs with b.ReportMetric, ns/op being the mean of the
// latency whose p50-ms and p99-ms it reports (a hand-off, a write lock, a
// release, a round, an item). One b.Loop iteration is one fixed round of
// work at that N, so -benchtime 1x measures one round and a longer
// benchtime averages more. The largest N of each sweep runs only with
// ZKGEN_SWEEP_FULL=1. Run one sweep and keep its raw output under its
// recipe's name in lower case with dashes (SweepDoubleBarrier:
// double-barrier.txt), as the charts expect:
//
//	go test ./runtime/bench -run '^$' -bench 'SweepSemaphore$' -benchtime 1x | tee runtime/bench/results/sweep/semaphore.txt

// sweepFullEnv names the environment variable that adds the largest points.
const sweepFullEnv = "ZKGEN_SWEEP_FULL"

// sweepSizes returns the default sizes, and full's after them when
// ZKGEN_SWEEP_FULL=1.
func sweepSizes(def []int, full ...int) []int {
	if os.Getenv(sweepFullEnv) == "1" {
		return append(append([]int(nil), def...), full...)
	}
	return def
}

// sweep runs fn as the sub-benchmark impl=<impl>/n=<n> for every n.
func sweep(b *testing.B, impl string, sizes []int, fn func(b *testing.B, n int)) {
	b.Run("impl="+impl, func(b *testing.B) {
		for _, n := range sizes {
			b.Run("n="+strconv.Itoa(n), func(b *testing.B) { fn(b, n) })
		}
	})
}

// sessions opens n zkgen sessions through addr, a few at a time; the
// benchmark's cleanup closes them.
func sessions(b *testing.B, addr string, n int) []*runtime.Session {
	b.Helper()
	ss := make([]*runtime.Session, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	gate := make(chan struct{}, 16)
	for i := range ss {
		wg.Add(1)
		gate <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-gate }()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			s, err := runtime.Connect(ctx, []string{addr}, runtime.WithSessionTimeout(20*time.Second))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				firstErr = cmp(firstErr, err)
				return
			}
			ss[i] = s
		}()
	}
	wg.Wait()
	b.Cleanup(func() {
		for _, s := range ss {
			if s != nil {
				s.Close()
			}
		}
	})
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	return ss
}

// wireMeter sums the wire counts of the measured spans of a sweep, like
// meter, and the bytes the clients read: bytesread/op leaves out the ping
// replies (20 bytes each, sent on a timer, not for the work).
type wireMeter struct {
	p                        *zktest.Proxy
	last                     zktest.Counts
	req, notify, read, pings int64
}

func newWireMeter(p *zktest.Proxy) *wireMeter { return &wireMeter{p: p} }

func (m *wireMeter) start() { m.last = m.p.Counts() }

func (m *wireMeter) stop() {
	c := m.p.Counts()
	m.req += c.Total() - m.last.Total()
	m.notify += c.Notifications - m.last.Notifications
	m.read += c.BytesRead - m.last.BytesRead
	m.pings += c.Requests[zktest.OpPing] - m.last.Requests[zktest.OpPing]
}

// report reports req/op, notify/op and bytesread/op over ops operations,
// with prefix before the names.
func (m *wireMeter) report(b *testing.B, ops int, prefix string) {
	b.ReportMetric(float64(m.req)/float64(ops), prefix+"req/op")
	b.ReportMetric(float64(m.notify)/float64(ops), prefix+"notify/op")
	b.ReportMetric(float64(m.read-pingReplyBytes*m.pings)/float64(ops), prefix+"bytesread/op")
}

// pingReplyBytes is the size of a ping's reply frame: length, xid, zxid,
// err.
const pingReplyBytes = 4 + 16

// opsSince logs the requests by opcode since before, per unit of work
// (units), when ZKGEN_BENCH_OPS is set.
func opsSince(b *testing.B, p *zktest.Proxy, before zktest.Counts, units int) {
	if os.Getenv("ZKGEN_BENCH_OPS") == "" {
		return
	}
	now := p.Counts()
	per := map[int32]float64{}
	for op, k := range now.Requests {
		if d := k - before.Requests[op]; d > 0 && op != zktest.OpPing {
			per[op] = float64(d) / float64(units)
		}
	}
	b.Logf("requests by opcode per unit: %v; notifications %.2f", per, float64(now.Notifications-before.Notifications)/float64(units))
}

// cmp returns a if it is set, else b.
func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// durations collects durations from many goroutines.
type durations struct {
	mu sync.Mutex
	ds []time.Duration
}

func (l *durations) add(d time.Duration) {
	l.mu.Lock()
	l.ds = append(l.ds, d)
	l.mu.Unlock()
}

// report reports the p50 and p99 in milliseconds as p50-ms and p99-ms,
// with prefix before the names, and without a prefix the mean as ns/op.
func (l *durations) report(b *testing.B, prefix string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if prefix == "" && len(l.ds) > 0 {
		var sum time.Duration
		for _, d := range l.ds {
			sum += d
		}
		b.ReportMetric(float64(sum)/float64(len(l.ds)), "ns/op")
	}
	ms(b, percentile(l.ds, 0.5), prefix+"p50-ms")
	ms(b, percentile(l.ds, 0.99), prefix+"p99-ms")
}

// handoffs pairs every release with the acquisition it lets in: release
// records the time a holder starts releasing, acquired takes the oldest
// unpaired release and records the time from it to now. With every
// participant queued, each acquisition after the first few is let in by one
// release, in order.
type handoffs struct {
	mu       sync.Mutex
	released []time.Time
	lat      *durations
	on       bool // recording
}

func (h *handoffs) release() {
	h.mu.Lock()
	h.released = append(h.released, time.Now())
	h.mu.Unlock()
}

func (h *handoffs) acquired() {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.released) == 0 {
		return
	}
	t := h.released[0]
	h.released = h.released[1:]
	if h.on {
		h.lat.add(now.Sub(t))
	}
}

// window counts operations done by many goroutines and meters the wire
// between the warm-up's end (warm operations) and warm+ops operations:
// start runs at the first, stop at the second, and done is closed then.
type window struct {
	count     atomic.Int64
	warm, ops int64
	start     func()
	stop      func()
	done      chan struct{}
	once      sync.Once
}

func newWindow(warm, ops int, start, stop func()) *window {
	return &window{warm: int64(warm), ops: int64(ops), start: start, stop: stop, done: make(chan struct{})}
}

// tick counts one operation; it reports whether it fell inside the window.
func (w *window) tick() bool {
	k := w.count.Add(1)
	switch {
	case k == w.warm:
		w.start()
	case k == w.warm+w.ops:
		w.stop()
		w.once.Do(func() { close(w.done) })
		return true
	}
	return k > w.warm && k < w.warm+w.ops
}

// untilCancelled runs fn on every worker in a loop until ctx ends, then
// waits for them; an error before ctx ends fails the benchmark.
func untilCancelled[W any](b *testing.B, ctx context.Context, workers []W, fn func(w W) error) {
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := fn(w); err != nil {
					if ctx.Err() == nil {
						b.Error(err)
					}
					return
				}
			}
		}()
	}
	wg.Wait()
}
