package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// BenchmarkDiscoveryOthers measures what the other services under a base
// cost a provider of one service (issue 43; zkgen alone: Curator's
// provider caches its own service's node only). The base holds the
// service "svc" with 10 instances and the service "other" with m. For a
// runtime.Services of the base (mode=base) and one made
// WithFindOnly("svc") (mode=only) it reports:
//
//   - heap-MB: the heap in use once Instances("svc") returned, less the
//     heap before the Services was made (both after a GC);
//   - relookup-us: p50 and p99 of the provider's first Instance() after a
//     registration of "other" reached the cache (its Changes event), over
//     discoveryChanges registrations by a writer session of its own
//     (mode=base only: mode=only does not see them);
//   - lookups/s: Instance() on one goroutine, as BenchmarkDiscovery.
//
// Run with -benchtime 1x.
func BenchmarkDiscoveryOthers(b *testing.B) {
	for _, m := range []int{1000, 10_000} {
		b.Run("m="+strconv.Itoa(m), func(b *testing.B) {
			base := fmt.Sprintf("/bench/discovery-others-%d-%d", m, seq.Add(1))
			serviceTree(b, base, discoveryService, 10)
			serviceTree(b, base, "other", m)
			b.Run("mode=base", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					othersRun(b, base, runtime.NewServices[discoveryPayload](runtime.At(base)), true)
				}
			})
			b.Run("mode=only", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					d := runtime.NewServices[discoveryPayload](runtime.At(base), runtime.WithFindOnly(discoveryService))
					othersRun(b, base, d, false)
				}
			})
		})
	}
}

// serviceTree registers n instances of service name under base, on a
// setup session (direct to the server) that lives until b ends.
func serviceTree(b *testing.B, base, name string, n int) {
	c := gozk(b, zktest.Shared(b, shared, sharedErr).Addr())
	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{"/bench", base, base + "/" + name} {
		if _, err := c.Create(p, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			b.Fatal(err)
		}
	}
	for i := 0; i < n; i += 1000 {
		var ops []any
		for j := i; j < min(n, i+1000); j++ {
			id := discoveryID(j)
			ops = append(ops, &zk.CreateRequest{Path: base + "/" + name + "/" + id, Data: serviceData(name, id),
				Acl: acl, Flags: zk.FlagEphemeral})
		}
		if _, err := c.Multi(ops...); err != nil {
			b.Fatal(err)
		}
	}
}

// serviceData is discoveryData for service name.
func serviceData(name, id string) []byte {
	return []byte(`{"name":"` + name + `","id":"` + id + `","address":"10.0.0.1","port":8080,"sslPort":null,` +
		`"payload":{"@class":"` + discoveryClass + `","zone":"eu-1"},"registrationTimeUTC":1795910400000,` +
		`"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}`)
}

// othersRun loads d (a Services of base) under Supervise and reports its
// figures; relookups: time the provider's lookups after changes of
// "other" (d must see them).
func othersRun(b *testing.B, base string, d *runtime.Services[discoveryPayload], relookups bool) {
	srv := zktest.Shared(b, shared, sharedErr)
	heap0 := heapInUse()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = runtime.Supervise(ctx, []string{srv.Addr()}, d.Run,
			runtime.WithSessionTimeout(10*time.Second), runtime.WithLogger(slog.New(slog.DiscardHandler)))
	}()
	defer func() { cancel(); <-done }()
	if all, err := d.Instances(ctx, discoveryService); err != nil || len(all) != 10 {
		b.Fatalf("Instances: %d instances, %v; want 10", len(all), err)
	}
	b.ReportMetric(float64(heapInUse()-heap0)/1e6, "heap-MB")
	pr := d.Provider(discoveryService, runtime.RoundRobin, 0)
	k, in := zkgenLookups(b, pr)
	b.ReportMetric(float64(k)/in.Seconds(), "lookups/s")
	if relookups {
		var ds []time.Duration
		w := gozk(b, srv.Addr())
		seen := othersSeen(ctx, d)
		for r := 1; r <= discoveryChanges; r++ {
			id := fmt.Sprintf("c-%06d", r)
			if _, err := w.Create(base+"/other/"+id, serviceData("other", id), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
				b.Fatal(err)
			}
			for s := range seen {
				if s == id {
					break
				}
			}
			t0 := time.Now()
			if _, err := pr.Instance(); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
		}
		b.ReportMetric(float64(percentile(ds, 0.5).Nanoseconds())/1e3, "relookup-p50-us")
		b.ReportMetric(float64(percentile(ds, 0.99).Nanoseconds())/1e3, "relookup-p99-us")
	}
	goruntime.KeepAlive(d)
}

// othersSeen returns the id of each instance of "other" the cache adds
// after its first sync.
func othersSeen(ctx context.Context, d *runtime.Services[discoveryPayload]) <-chan string {
	out, synced := make(chan string, 16), make(chan struct{})
	evs := d.Changes(ctx, "other")
	go func() {
		defer close(out)
		for ev := range evs {
			switch {
			case ev.Kind == runtime.CacheSynced && synced != nil:
				close(synced)
				synced = nil
			case ev.Kind == runtime.CacheAdded && synced == nil:
				select {
				case out <- ev.Instance.ID:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	<-synced
	return out
}
