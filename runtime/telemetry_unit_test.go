package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// With no provider a session's telemetry is nil, and every hook the
// recipes call returns at once: no allocation, nothing recorded.
func TestTelemetryOffAllocatesNothing(t *testing.T) {
	tel, err := newTelemetry(client.TelemetryConfig{})
	if tel != nil || err != nil {
		t.Fatalf("newTelemetry without providers = %v, %v; want nil, nil", tel, err)
	}
	ctx := context.Background()
	l := NewLock(nil, At("/a/b"), WithResourceName("orders"))
	h := &hold{lost: make(chan struct{})}
	fail := errors.New("x")
	members := []Locker{l, NewSemaphore(nil, At("/a/c"), 1)}
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		tel.lockOp(ctx, opLockAcquire, l).acquired(h, nil)
		sp := tel.begin(ctx, opQueuePut, queueConfig{}.kindName(), "jobs", "/a/b")
		err = fail
		sp.end(&err)
		tel.tenureOf(h, "group", "g", "/a/b")
		tel.tenureLost("lease", "l", "/a/b")
		tel.partitionAcquired("p", "/a/b")
		lctx, lsp := lockAll(ctx, members)
		_ = lsp.context(lctx)
		lsp.end(&err)
		tel.failover(tel.now(), "e", "/a/b")
		tel.failover(time.Now(), "e", "/a/b")
	})
	if allocs != 0 {
		t.Errorf("hooks without telemetry allocate %v times per run, want 0", allocs)
	}
	if h.tel.Load() != nil {
		t.Error("a tenure was marked for recording without telemetry")
	}
}

// lockCycleHooks runs the telemetry hooks of one Lock and Unlock of l, on
// the tenure h: what the instrumentation adds to an uncontended cycle,
// apart from ZooKeeper.
func lockCycleHooks(ctx context.Context, tel *telemetry, l *Lock, h *hold) {
	tel.lockOp(ctx, opLockAcquire, l).acquired(h, nil)
	var err error
	sp := tel.lockOp(ctx, opLockRelease, l)
	endTenure(&h.tel, false)
	sp.end(&err)
}

// The hooks of a lock cycle alone, without ZooKeeper: with no provider
// (a nil check each), with the SDK's metrics, and with its metrics and
// traces. Set against BenchmarkLockUncontendedTelemetry's time per cycle,
// this is the overhead, free of the round trips' noise.
func BenchmarkTelemetryLockHooks(b *testing.B) {
	for _, v := range []struct {
		name   string
		traces bool
		tel    bool
	}{{"none", false, false}, {"sdk-metrics", false, true}, {"sdk-metrics+traces", true, true}} {
		b.Run("tel="+v.name, func(b *testing.B) {
			var cfg client.TelemetryConfig
			if v.tel {
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
				cfg.Meter = mp
			}
			if v.traces {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				cfg.Tracer = tp
			}
			tel, err := newTelemetry(cfg)
			if err != nil {
				b.Fatal(err)
			}
			l := NewLock(nil, At("/bench/lock"), WithResourceName("bench_lock"))
			ctx := context.Background()
			h := &hold{lost: make(chan struct{})}
			b.ReportAllocs()
			for b.Loop() {
				lockCycleHooks(ctx, tel, l, h)
			}
		})
	}
}

// discardSpans is a span exporter that drops what it is given.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }
