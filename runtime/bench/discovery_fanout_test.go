package bench

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// BenchmarkDiscoveryFanout measures how long a registration takes to reach
// every client of a service (issue 43): BenchmarkDiscovery's load and
// changes, with k clients instead of one, each on a session of its own
// (zkgen: a Services run by Supervise each; Curator: one driver process
// with k CuratorFrameworks, each with its ServiceDiscovery and
// ServiceProvider, CuratorDiscoveryBench.java's mode=fanout), all k
// through one counting proxy, on a service of fanoutInstances. It
// reports load-s and load-req (until all k hold the instances), and per
// registration and per removal (fanoutChanges of each) the time until
// the last of the k has it, all-add-p50-ms, all-add-p99-ms, all-rm-p50-ms
// and all-rm-p99-ms, and the k clients' requests together, add-req and
// rm-req. Sub-benchmarks are clients=<k>/impl=<impl>; -benchtime 1x.
func BenchmarkDiscoveryFanout(b *testing.B) {
	for _, k := range []int{1, 10, 50} {
		b.Run("clients="+strconv.Itoa(k), func(b *testing.B) {
			base := discoveryTree(b, fanoutInstances)
			b.Run("impl=zkgen", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					zkgenFanout(b, base, k).report(b)
				}
			})
			b.Run("impl=curator", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					peerFanout(b, base, k).report(b)
				}
			})
		})
	}
}

const (
	// fanoutInstances is the service's size: a service's usual, not a
	// cache's stress (BenchmarkDiscovery has those).
	fanoutInstances = 100
	// fanoutChanges is the number of registrations (and removals) timed.
	fanoutChanges = 50
)

// fanoutFigures are one run's measures.
type fanoutFigures struct {
	load      time.Duration
	loadReq   int64
	add, rm   []time.Duration
	addC, rmC zktest.Counts // all clients', summed over the changes
}

func (f fanoutFigures) report(b *testing.B) {
	b.ReportMetric(f.load.Seconds(), "load-s")
	b.ReportMetric(float64(f.loadReq), "load-req")
	ms(b, percentile(f.add, 0.5), "all-add-p50-ms")
	ms(b, percentile(f.add, 0.99), "all-add-p99-ms")
	ms(b, percentile(f.rm, 0.5), "all-rm-p50-ms")
	ms(b, percentile(f.rm, 0.99), "all-rm-p99-ms")
	b.ReportMetric(float64(f.addC.Total())/float64(len(f.add)), "add-req")
	b.ReportMetric(float64(f.rmC.Total())/float64(len(f.rm)), "rm-req")
}

// zkgenFanout runs the sequence on k runtime.Services of base, each run by
// runtime.Supervise on a session of its own through one proxy.
func zkgenFanout(b *testing.B, base string, k int) fanoutFigures {
	p, _ := setup(b)
	w := gozk(b, p.Target())
	ctx, cancel := context.WithCancel(context.Background())
	gate := make(chan struct{})
	dones := make([]<-chan struct{}, k)
	ds := make([]*runtime.Services[discoveryPayload], k)
	for i := range k {
		ds[i], dones[i] = superviseServices(ctx, p, base, gate)
	}
	defer func() {
		cancel()
		for _, d := range dones {
			<-d
		}
	}()
	var f fanoutFigures
	last := p.Counts()
	t0 := time.Now()
	close(gate)
	for _, d := range ds {
		if all, err := d.Instances(ctx, discoveryService); err != nil || len(all) != fanoutInstances {
			b.Fatalf("Instances: %d instances, %v; want %d", len(all), err, fanoutInstances)
		}
	}
	f.load = time.Since(t0)
	f.loadReq = since(p, last).Total()
	seen := make([]<-chan string, k)
	for i, d := range ds {
		seen[i] = instancesSeen(ctx, d)
	}
	for r := 1; r <= fanoutChanges; r++ {
		el, c := fanoutChange(b, p, w, seen, base, r, true)
		f.add, f.addC = append(f.add, el), add(f.addC, c)
		el, c = fanoutChange(b, p, w, seen, base, r, false)
		f.rm, f.rmC = append(f.rm, el), add(f.rmC, c)
	}
	return f
}

// fanoutChange registers (create) or removes the r-th change's instance
// through w and returns the time until every one of seen has it, and the
// clients' counts in that time.
func fanoutChange(b *testing.B, p *zktest.Proxy, w *zk.Conn, seen []<-chan string, base string, r int, create bool) (time.Duration, zktest.Counts) {
	b.Helper()
	last := p.Counts()
	t0 := time.Now()
	want := writeChange(b, w, base, r, create)
	timeout := time.After(peerWait)
	for i, ch := range seen {
		for got := false; !got; {
			select {
			case s := <-ch:
				got = s == want
			case <-timeout:
				b.Fatalf("%s not seen by client %d within %v", want, i, peerWait)
			}
		}
	}
	return time.Since(t0), since(p, last)
}

// peerFanout runs the sequence in the Curator driver's fanout mode: round
// 1 loads the k clients, then one round per registration or removal.
func peerFanout(b *testing.B, base string, k int) fanoutFigures {
	p, _ := setup(b)
	d := startDriver(b, curatorDiscovery, p, base, "discovery", "mode=fanout", "clients="+strconv.Itoa(k),
		"changes="+strconv.Itoa(fanoutChanges), "writer_zk="+p.Target())
	round := func() (map[string]int64, zktest.Counts) {
		d.ready()
		last := p.Counts()
		res, err := d.cacheRound()
		if err != nil {
			b.Fatalf("curator: %v; its output:\n%s", err, d.log.Tail(30))
		}
		if res["n"] != int64(k) {
			b.Fatalf("curator: %d clients, want %d", res["n"], k)
		}
		return res, since(p, last)
	}
	var f fanoutFigures
	res, c := round()
	f.load, f.loadReq = time.Duration(res["ns"]), c.Total()
	for r := 1; r <= fanoutChanges; r++ {
		res, c = round()
		f.add, f.addC = append(f.add, time.Duration(res["ns"])), add(f.addC, c)
		res, c = round()
		f.rm, f.rmC = append(f.rm, time.Duration(res["ns"])), add(f.rmC, c)
	}
	d.finish()
	return f
}
