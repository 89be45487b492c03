package serve_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// BenchmarkServeScale: zkgen serve (a process, defaults but for
// --max-instances 1000) on the example spec with 1,000 held instances of
// order_lock and 10,000 items in the outbox queue. It reports what serve
// costs: its watches (server side, ZooKeeper's wchs), its memory (resident,
// and the Go heap in use) and the time and requests (counted on the wire,
// pings left out) to read everything, then the requests and bytes each
// single change costs it: a lock released and taken again, an item put,
// an item taken.
//
//	go test -run '^$' -bench BenchmarkServeScale -benchtime 1x ./internal/serve
func BenchmarkServeScale(b *testing.B) {
	const locks, items, changes = 1000, 10000, 20
	srv := zktest.Start(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := exampleClient(b, ctx, srv.Servers())
	held := holdLocks(ctx, b, c, 0, locks)
	q := c.Outbox()
	for done := 0; done < items; {
		batch := make([]coord.Job, min(1000, items-done))
		for i := range batch {
			batch[i] = coord.Job{Name: fmt.Sprint("item-", done+i)}
		}
		n, err := q.PutAll(ctx, batch)
		if err != nil {
			b.Fatal(err)
		}
		done += n
	}

	for b.Loop() {
		p := zktest.NewProxy(b, srv.Addr())
		start := time.Now()
		base, pid := startServePID(b, p.Addr(), "--max-instances", strconv.Itoa(locks))
		awaitMetrics(b, base, func(m metrics) bool {
			return m["zkgen_serve_zookeeper_up"] == 1 && m[`zkgen_serve_instances{resource="order_lock"}`] == locks &&
				m["zkgen_serve_reads_total"] >= locks+1 && m.count("zkgen_lock_holders{") >= locks
		})
		quiet(p)
		b.ReportMetric(time.Since(start).Seconds(), "s-to-current")
		b.ReportMetric(float64(p.Counts().Total()), "req-to-current")
		mntr, err := zktest.FourLetter(srv.Addr(), "mntr", 5*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(watchCount(b, mntr)), "server-watches")
		m := scrape(b, base)
		b.ReportMetric(m["zkgen_serve_watches"], "serve-watches")
		b.ReportMetric(m["go_memstats_heap_inuse_bytes"]/(1<<20), "heap-MiB")
		b.ReportMetric(float64(rss(b, pid))/(1<<20), "rss-MiB")

		change := func(what string, do func()) {
			p.ResetCounts()
			for range changes {
				before := p.Counts().Total()
				do()
				awaitRequests(b, p, before)
				quiet(p)
			}
			cs := p.Counts()
			b.ReportMetric(float64(cs.Total())/changes, "req/"+what)
			b.ReportMetric(float64(cs.BytesRead)/changes/1024, "KiB/"+what)
		}
		i := 0
		change("lock-change", func() {
			l := held[i%locks]
			i++
			if err := l.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := l.Lock(ctx); err != nil {
				b.Fatal(err)
			}
		})
		change("put", func() {
			if err := q.Put(ctx, coord.Job{Name: "more"}); err != nil {
				b.Fatal(err)
			}
		})
		change("take", func() {
			d, err := q.Take(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := d.Ack(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// holdLocks takes instances from to to-1 of order_lock, 16 at a time.
func holdLocks(ctx context.Context, b testing.TB, c *coord.Client, from, to int) []coord.OrderLockHandle {
	held := make([]coord.OrderLockHandle, to-from)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	errs := make(chan error, len(held))
	for i := range held {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			held[i] = c.OrderLock(from + i)
			if err := held[i].Lock(ctx); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return held
}

// metrics is one scrape of /metrics: sample name with labels → value.
type metrics map[string]float64

func (m metrics) count(prefix string) int {
	n := 0
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

// scrape reads /metrics. Series are keyed by their name and labels as
// exposed, except that empty labels are dropped.
func scrape(b testing.TB, base string) metrics {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	m := metrics{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, _ := strconv.ParseFloat(line[i+1:], 64)
		m[dropEmptyLabels(line[:i])] = v
	}
	return m
}

func dropEmptyLabels(s string) string {
	open := strings.IndexByte(s, '{')
	if open < 0 {
		return s
	}
	var keep []string
	for _, l := range strings.Split(strings.TrimSuffix(s[open+1:], "}"), ",") {
		if !strings.HasSuffix(l, `=""`) {
			keep = append(keep, l)
		}
	}
	return s[:open] + "{" + strings.Join(keep, ",") + "}"
}

// awaitMetrics polls /metrics until ok holds (5 minutes at most).
func awaitMetrics(b testing.TB, base string, ok func(metrics) bool) {
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if ok(scrape(b, base)) {
			return
		}
	}
	b.Fatal("serve never reached the state awaited")
}

// awaitRequests waits until the proxy has relayed more requests than
// before: serve has reacted to the change.
func awaitRequests(b *testing.B, p *zktest.Proxy, before int64) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if p.Counts().Total() > before {
			return
		}
	}
	b.Fatal("serve sent nothing after a change")
}

// quiet waits until the proxy has relayed no request for 300ms: serve has
// read what the change touched.
func quiet(p *zktest.Proxy) {
	last, since := p.Counts().Total(), time.Now()
	for time.Since(since) < 300*time.Millisecond {
		time.Sleep(10 * time.Millisecond)
		if n := p.Counts().Total(); n != last {
			last, since = n, time.Now()
		}
	}
}

// watchCount parses mntr's zk_watch_count: the server's data and child
// watches of every session (the benchmark's own sessions hold none: their
// locks are held, their queue handles idle).
func watchCount(b testing.TB, mntr string) int {
	for _, line := range strings.Split(mntr, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "zk_watch_count" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	b.Fatalf("mntr has no zk_watch_count:\n%s", mntr)
	return 0
}

// rss is a process's resident set size in bytes (Linux).
func rss(b *testing.B, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
