package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	libs "github.com/zkgen/zkgen/internal/peers"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// BenchmarkDiscovery measures finding a service (issue 43): zkgen's
// runtime.Services with a round-robin Provider, beside Curator's
// ServiceProvider (ServiceDiscoveryBuilder, serviceProviderBuilder with its
// default ServiceCache, RoundRobinStrategy) in a driver process
// (testdata/CuratorDiscoveryBench.java), each set up as its docs have it,
// on its own session through its own counting proxy. The service "svc"
// has n instances (ephemeral nodes <base>/svc/i-000000 ... of Curator's
// ServiceInstance JSON, written once per size by a setup session). For
// each it reports:
//
//   - the load: load-s, from the start until the provider holds the n
//     instances (zkgen: Instances returns; Curator: ServiceProvider.start,
//     which waits for its cache), load-req and load-kB;
//   - lookups/s: calls of the provider's Instance (getInstance) on one
//     goroutine (thread) for discoveryLookups, after as long a warm-up;
//   - discoveryChanges registrations, each an ephemeral node created by a
//     writer session of the impl's own (not counted: it talks to the
//     server directly), each followed by its removal: add-p50-ms,
//     add-p99-ms and rm-p50-ms, rm-p99-ms until the provider's cache has
//     it (zkgen: its Changes event; Curator: its cache's listener finds it
//     in getInstances), and per change the reader's requests (add-req,
//     rm-req), bytes the server sent it (add-B, rm-B) and notifications.
//
// Sub-benchmarks are n=<n>/impl=<impl>; run with -benchtime 1x (each
// iteration is the whole sequence).
func BenchmarkDiscovery(b *testing.B) {
	for _, n := range []int{10, 1000, 10_000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			base := discoveryTree(b, n)
			b.Run("impl=zkgen", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					zkgenDiscovery(b, base, n).report(b)
				}
			})
			b.Run("impl=curator", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					peerDiscovery(b, base, n).report(b)
				}
			})
		})
	}
}

const (
	// discoveryChanges is the number of registrations (and removals)
	// timed per run.
	discoveryChanges = 100
	// discoveryLookups is how long lookups are counted (and warmed up).
	discoveryLookups = 2 * time.Second
	// discoveryService is the service's name.
	discoveryService = "svc"
	// discoveryClass is the Java payload class of the driver, which the
	// data names for Curator's typed reader.
	discoveryClass = "CuratorDiscoveryBench$Payload"
)

// discoveryID is the id of the i-th instance of the tree; the changes
// register c-000001, ... The driver uses the same.
func discoveryID(i int) string { return fmt.Sprintf("i-%06d", i) }

// discoveryData is an instance's data as Curator's JsonInstanceSerializer
// writes it (the driver writes the same bytes).
func discoveryData(id string) []byte { return serviceData(discoveryService, id) }

// discoveryPayload is the typed payload, as the driver's Payload class.
type discoveryPayload struct {
	Zone string `json:"zone"`
}

// discoveryTree registers n instances under a fresh base on a setup
// session of its own (direct to the server) that lives until b ends, and
// returns the base.
func discoveryTree(b *testing.B, n int) string {
	base := fmt.Sprintf("/bench/discovery-%d-%d", n, seq.Add(1))
	serviceTree(b, base, discoveryService, n)
	return base
}

// discoveryFigures are one run's measures.
type discoveryFigures struct {
	load              time.Duration
	loadReq, loadRead int64
	lookups           int64
	lookupsIn         time.Duration
	add, rm           []time.Duration
	addC, rmC         zktest.Counts // the reader's, summed over the changes
}

func (f discoveryFigures) report(b *testing.B) {
	b.ReportMetric(f.load.Seconds(), "load-s")
	b.ReportMetric(float64(f.loadReq), "load-req")
	b.ReportMetric(float64(f.loadRead)/1000, "load-kB")
	b.ReportMetric(float64(f.lookups)/f.lookupsIn.Seconds(), "lookups/s")
	for _, c := range []struct {
		name string
		ds   []time.Duration
		cs   zktest.Counts
	}{{"add", f.add, f.addC}, {"rm", f.rm, f.rmC}} {
		k := float64(len(c.ds))
		ms(b, percentile(c.ds, 0.5), c.name+"-p50-ms")
		ms(b, percentile(c.ds, 0.99), c.name+"-p99-ms")
		b.ReportMetric(float64(c.cs.Total())/k, c.name+"-req")
		b.ReportMetric(float64(c.cs.BytesRead)/k, c.name+"-B")
		b.ReportMetric(float64(c.cs.Notifications)/k, c.name+"-notify")
		if os.Getenv("ZKGEN_BENCH_OPS") != "" {
			b.Logf("%s: requests by opcode: %v", c.name, c.cs.Requests)
		}
	}
	b.ReportMetric(float64(f.lookupsIn.Nanoseconds())/float64(f.lookups), "ns/op")
}

// since returns the counts of p since last (requests, bytes read and
// notifications).
func since(p *zktest.Proxy, last zktest.Counts) zktest.Counts {
	c := p.Counts()
	d := zktest.Counts{Requests: map[int32]int64{}, Notifications: c.Notifications - last.Notifications,
		RoundTrips: c.RoundTrips - last.RoundTrips, BytesRead: c.BytesRead - last.BytesRead}
	for op, k := range c.Requests {
		d.Requests[op] = k - last.Requests[op]
	}
	return d
}

// add adds b's counts to a.
func add(a, b zktest.Counts) zktest.Counts {
	if a.Requests == nil {
		a.Requests = map[int32]int64{}
	}
	for op, k := range b.Requests {
		a.Requests[op] += k
	}
	a.Notifications += b.Notifications
	a.RoundTrips += b.RoundTrips
	a.BytesRead += b.BytesRead
	return a
}

// zkgenDiscovery runs the sequence on a runtime.Services of base run by
// runtime.Supervise, and its round-robin provider, as docs/service.md has
// them.
func zkgenDiscovery(b *testing.B, base string, n int) discoveryFigures {
	p, _ := setup(b)
	w := gozk(b, p.Target())
	ctx, cancel := context.WithCancel(context.Background())
	gate := make(chan struct{})
	d, done := superviseServices(ctx, p, base, gate)
	defer func() { cancel(); <-done }()
	var f discoveryFigures
	last := p.Counts()
	t0 := time.Now()
	close(gate)
	if all, err := d.Instances(ctx, discoveryService); err != nil || len(all) != n {
		b.Fatalf("Instances: %d instances, %v; want %d", len(all), err, n)
	}
	f.load = time.Since(t0)
	lc := since(p, last)
	f.loadReq, f.loadRead = lc.Total(), lc.BytesRead
	pr := d.Provider(discoveryService, runtime.RoundRobin, 0)
	f.lookups, f.lookupsIn = zkgenLookups(b, pr)
	seen := instancesSeen(ctx, d)
	for r := 1; r <= discoveryChanges; r++ {
		el, c := zkgenRegistration(b, p, w, seen, base, r, true)
		f.add, f.addC = append(f.add, el), add(f.addC, c)
		checkAvailable(b, pr, r, true)
		el, c = zkgenRegistration(b, p, w, seen, base, r, false)
		f.rm, f.rmC = append(f.rm, el), add(f.rmC, c)
		checkAvailable(b, pr, r, false)
	}
	return f
}

// superviseServices starts a runtime.Services of base run by
// runtime.Supervise through p, as docs/service.md has it, whose first run
// waits until gate is closed (the clock's start); done is closed once
// Supervise has returned (after ctx ends).
func superviseServices(ctx context.Context, p *zktest.Proxy, base string, gate <-chan struct{}) (d *runtime.Services[discoveryPayload], done <-chan struct{}) {
	d = runtime.NewServices[discoveryPayload](runtime.At(base))
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		_ = runtime.Supervise(ctx, []string{p.Addr()}, func(ctx context.Context, s *runtime.Session) error {
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
			return d.Run(ctx, s)
		}, runtime.WithSessionTimeout(10*time.Second), runtime.WithLogger(slog.New(slog.DiscardHandler)))
	}()
	return d, ch
}

// zkgenLookups warms pr up, then counts its lookups for discoveryLookups.
func zkgenLookups(b *testing.B, pr *runtime.ServiceProvider[discoveryPayload]) (int64, time.Duration) {
	var k int64
	var t0 time.Time
	for _, until := range []time.Duration{discoveryLookups, discoveryLookups} {
		k, t0 = 0, time.Now()
		for time.Since(t0) < until {
			for range 100 {
				if _, err := pr.Instance(); err != nil {
					b.Fatal(err)
				}
			}
			k += 100
		}
	}
	return k, time.Since(t0)
}

// instancesSeen returns "+id" or "-id" for each instance of the service
// the Changes stream adds or removes, from its first Synced on (the
// Added events of the instances held come before it).
func instancesSeen(ctx context.Context, d *runtime.Services[discoveryPayload]) <-chan string {
	out, synced := make(chan string, 16), make(chan struct{})
	evs := d.Changes(ctx, discoveryService)
	go func() {
		for ev := range evs {
			s := ""
			switch ev.Kind {
			case runtime.CacheSynced:
				if synced != nil {
					close(synced)
					synced = nil
				}
			case runtime.CacheAdded:
				s = "+" + ev.Instance.ID
			case runtime.CacheRemoved:
				s = "-" + ev.Instance.ID
			}
			if s == "" || synced != nil {
				continue
			}
			select {
			case out <- s:
			case <-ctx.Done():
				return
			}
		}
	}()
	<-synced
	return out
}

// zkgenRegistration registers (create) or removes the r-th change's
// instance through w and returns the time until seen has it, and the
// reader's counts in that time.
func zkgenRegistration(b *testing.B, p *zktest.Proxy, w *zk.Conn, seen <-chan string, base string, r int, create bool) (time.Duration, zktest.Counts) {
	b.Helper()
	last := p.Counts()
	t0 := time.Now()
	want := writeChange(b, w, base, r, create)
	timeout := time.After(peerWait)
	for {
		select {
		case s := <-seen:
			if s == want {
				return time.Since(t0), since(p, last)
			}
		case <-timeout:
			b.Fatalf("%s not seen within %v", want, peerWait)
		}
	}
}

// writeChange registers (create) or removes the r-th change's instance
// c-<r> through w, and returns what a Changes stream says of it: "+c-<r>"
// or "-c-<r>" (see instancesSeen).
func writeChange(b *testing.B, w *zk.Conn, base string, r int, create bool) string {
	b.Helper()
	id := fmt.Sprintf("c-%06d", r)
	path := base + "/" + discoveryService + "/" + id
	var err error
	if create {
		_, err = w.Create(path, discoveryData(id), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	} else {
		err = w.Delete(path, -1)
	}
	if err != nil {
		b.Fatal(err)
	}
	if create {
		return "+" + id
	}
	return "-" + id
}

// checkAvailable checks that the provider gives the r-th change's
// instance (or no longer does) once its event was seen.
func checkAvailable(b *testing.B, pr *runtime.ServiceProvider[discoveryPayload], r int, want bool) {
	b.Helper()
	id := fmt.Sprintf("c-%06d", r)
	all, err := pr.Available()
	if err != nil {
		b.Fatal(err)
	}
	found := false
	for _, in := range all {
		found = found || in.ID == id
	}
	if found != want {
		b.Fatalf("after its event, the provider gives %s: %v, want %v", id, found, want)
	}
}

// curatorDiscovery is the Curator driver of BenchmarkDiscovery; it needs
// curator-x-discovery besides the recipes.
var curatorDiscovery = &peerImpl{name: "curator", find: findCuratorDiscovery}

// curatorDiscoveryJar is Curator's discovery jar (Debian
// libcurator-discovery-java); its manifest brings Jackson.
const curatorDiscoveryJar = "/usr/share/java/curator-x-discovery.jar"

func findCuratorDiscovery() ([]string, error) {
	if _, err := os.Stat(curatorDiscoveryJar); err != nil {
		return nil, fmt.Errorf("%w: %s (Debian libcurator-discovery-java)", libs.ErrNotInstalled, curatorDiscoveryJar)
	}
	src, err := filepath.Abs(filepath.Join("testdata", "CuratorDiscoveryBench.java"))
	if err != nil {
		return nil, err
	}
	dir, err := javaBuildDir()
	if err != nil {
		return nil, err
	}
	cp := os.Getenv(libs.EnvCuratorClasspath)
	if cp == "" {
		cp = "/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar"
	}
	prev, had := os.LookupEnv(libs.EnvCuratorClasspath)
	os.Setenv(libs.EnvCuratorClasspath, curatorDiscoveryJar+":"+cp)
	java, cp, err := libs.Curator(src, filepath.Join(dir, "discovery"))
	if had {
		os.Setenv(libs.EnvCuratorClasspath, prev)
	} else {
		os.Unsetenv(libs.EnvCuratorClasspath)
	}
	if err != nil {
		return nil, err
	}
	return javaArgv(java, cp, "CuratorDiscoveryBench"), nil
}

// peerDiscovery runs the sequence in the Curator driver: round 1 loads,
// round 2 counts lookups, then one round per registration or removal.
func peerDiscovery(b *testing.B, base string, n int) discoveryFigures {
	p, _ := setup(b)
	d := startDriver(b, curatorDiscovery, p, base, "discovery", "nodes="+strconv.Itoa(n),
		"changes="+strconv.Itoa(discoveryChanges), "lookup_ms="+strconv.FormatInt(discoveryLookups.Milliseconds(), 10),
		"writer_zk="+p.Target())
	round := func() (map[string]int64, zktest.Counts) {
		d.ready()
		last := p.Counts()
		res, err := d.cacheRound()
		if err != nil {
			b.Fatalf("curator: %v; its output:\n%s", err, d.log.Tail(30))
		}
		return res, since(p, last)
	}
	var f discoveryFigures
	res, c := round()
	f.load, f.loadReq, f.loadRead = time.Duration(res["ns"]), c.Total(), c.BytesRead
	if res["n"] != int64(n) {
		b.Fatalf("curator's provider started holding %d instances, want %d", res["n"], n)
	}
	res, _ = round()
	f.lookups, f.lookupsIn = res["n"], time.Duration(res["ns"])
	for r := 1; r <= discoveryChanges; r++ {
		res, c = round()
		f.add, f.addC = append(f.add, time.Duration(res["ns"])), add(f.addC, c)
		res, c = round()
		f.rm, f.rmC = append(f.rm, time.Duration(res["ns"])), add(f.rmC, c)
	}
	d.finish()
	return f
}
