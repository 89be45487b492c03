package bench

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/zkgen/zkgen/runtime"
)

// discardSpans is a span exporter that drops what it is given: the
// benchmark pays for recording and batching spans, not for a network.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// telemetryOpts are the session options of each variant of
// BenchmarkLockUncontendedTelemetry.
var telemetryOpts = []struct {
	name string
	opts func(b *testing.B) []runtime.Option
}{
	{"none", func(*testing.B) []runtime.Option { return nil }},
	{"sdk-metrics", func(b *testing.B) []runtime.Option {
		return []runtime.Option{runtime.WithMeterProvider(meterProvider(b))}
	}},
	{"sdk-metrics+traces", func(b *testing.B) []runtime.Option {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		return []runtime.Option{runtime.WithMeterProvider(meterProvider(b)), runtime.WithTracerProvider(tp)}
	}},
}

// meterProvider is an SDK meter provider read by a manual reader, as a
// pull exporter (Prometheus) would be: nothing is exported meanwhile.
func meterProvider(b *testing.B) *sdkmetric.MeterProvider {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp
}

// One client acquires and releases a lock, no contention, with no
// telemetry, with the SDK's metrics, and with its metrics and traces: the
// cost of the instrumentation. The variants are sub-benchmarks, so -count
// interleaves them.
func BenchmarkLockUncontendedTelemetry(b *testing.B) {
	for _, v := range telemetryOpts {
		b.Run("tel="+v.name, func(b *testing.B) {
			p, path := setup(b)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			s, err := runtime.Connect(ctx, []string{p.Addr()}, append(v.opts(b), runtime.WithSessionTimeout(10*time.Second))...)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			lockCycles(b, p, zkgenLock{runtime.NewLock(s, runtime.At(path), runtime.WithResourceName("bench_lock")), context.Background()})
		})
	}
}
