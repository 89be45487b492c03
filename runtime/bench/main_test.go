package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

var (
	shared    *zktest.Server
	sharedErr error
	seq       atomic.Int64
)

func TestMain(m *testing.M) {
	shared, sharedErr = zktest.StartProcess()
	if shared != nil && benchmarking() {
		warmUp(shared.Addr())
	}
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// benchmarking reports whether benchmarks were asked for (-test.bench).
func benchmarking() bool {
	f := flag.Lookup("test.bench")
	return f != nil && f.Value.String() != ""
}

// warmUp runs lock-like request cycles (create, children, delete) on the
// freshly started server for a few seconds, so that its JVM has compiled
// the request path before the first sub-benchmark: otherwise whichever
// impl runs first in a process is measured on a colder server than the
// others (zkgen, first in every run, was).
func warmUp(addr string) {
	c, ev, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(nopLogger{}), zk.WithLogInfo(false))
	if err != nil {
		return
	}
	defer c.Close()
	for e := range ev {
		if e.State == zk.StateHasSession {
			break
		}
	}
	acl := zk.WorldACL(zk.PermAll)
	dir := "/bench-warmup"
	if _, err := c.Create(dir, nil, 0, acl); err != nil && err != zk.ErrNodeExists {
		return
	}
	for end := time.Now().Add(warmUpFor); time.Now().Before(end); {
		n, err := c.Create(dir+"/n-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			return
		}
		if _, _, err := c.Children(dir); err != nil {
			return
		}
		if err := c.Delete(n, -1); err != nil {
			return
		}
	}
}

// warmUpFor bounds warmUp.
const warmUpFor = 5 * time.Second

// setup returns a proxy to the shared server (for counting) and a fresh path.
func setup(b *testing.B) (*zktest.Proxy, string) {
	b.Helper()
	srv := zktest.Shared(b, shared, sharedErr)
	return zktest.NewProxy(b, srv.Addr()), fmt.Sprintf("/bench/%s-%d", b.Name(), seq.Add(1))
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// session opens a zkgen session through addr.
func session(b *testing.B, addr string) *runtime.Session {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := runtime.Connect(ctx, []string{addr}, runtime.WithSessionTimeout(10*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// gozk opens a plain go-zookeeper connection through addr.
func gozk(b *testing.B, addr string) *zk.Conn {
	b.Helper()
	c, ev, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(nopLogger{}), zk.WithLogInfo(false))
	if err != nil {
		b.Fatal(err)
	}
	for e := range ev {
		if e.State == zk.StateHasSession {
			break
		}
	}
	b.Cleanup(c.Close)
	return c
}

// report adds the wire counts per operation: requests, round trips (see
// zktest.Counts.RoundTrips) and notifications.
func report(b *testing.B, p *zktest.Proxy, ops int) {
	c := p.Counts()
	b.ReportMetric(float64(c.Total())/float64(ops), "req/op")
	b.ReportMetric(float64(c.RoundTrips)/float64(ops), "trips/op")
	b.ReportMetric(float64(c.Notifications)/float64(ops), "notify/op")
	if os.Getenv("ZKGEN_BENCH_OPS") != "" {
		b.Logf("requests by opcode: %v", c.Requests)
	}
}

// meter sums the wire counts of the measured parts of a benchmark whose
// iterations also do untimed setup through the same proxy.
type meter struct {
	p                  *zktest.Proxy
	last               zktest.Counts
	req, trips, notify int64
}

func (m *meter) start() { m.last = m.p.Counts() }

func (m *meter) stop() {
	c := m.p.Counts()
	m.req += c.Total() - m.last.Total()
	m.trips += c.RoundTrips - m.last.RoundTrips
	m.notify += c.Notifications - m.last.Notifications
}

func (m *meter) report(b *testing.B, ops int) {
	b.ReportMetric(float64(m.req)/float64(ops), "req/op")
	b.ReportMetric(float64(m.trips)/float64(ops), "trips/op")
	b.ReportMetric(float64(m.notify)/float64(ops), "notify/op")
}

// percentile returns the q-quantile (0..1) of ds, which it sorts.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}

// ms reports d as a metric in milliseconds.
func ms(b *testing.B, d time.Duration, unit string) {
	b.ReportMetric(float64(d)/float64(time.Millisecond), unit)
}

// runShared runs fn on each of the workers until b.N units of work are
// done, each unit once.
func runShared[W any](b *testing.B, workers []W, fn func(w W) error) {
	var wg sync.WaitGroup
	work := make(chan struct{}, b.N)
	for i := 0; i < b.N; i++ {
		work <- struct{}{}
	}
	close(work)
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				if err := fn(w); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
