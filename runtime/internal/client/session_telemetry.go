package client

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// --- The session's telemetry
//
// Metrics and traces through the OpenTelemetry API, opt-in per session:
// WithMeterProvider, WithTracerProvider, WithGlobalTelemetry. The session
// records its own counters (retries, connection losses, expiries) here;
// recipes build their instruments from the same providers (TelemetryConfig).
// The instruments and their attributes are listed in docs/telemetry.md.

// InstrumentationName is the instrumentation scope of the meter and tracer.
const InstrumentationName = "github.com/zkgen/zkgen/runtime"

// WithMeterProvider records the session's metrics (wait, hold and latency
// histograms, retry, connection-loss, expiry, lost-tenure and partition
// acquisition counters; see docs/telemetry.md) with mp. Default: none,
// nothing recorded.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(s *Session) { s.telCfg.Meter = mp }
}

// WithTracerProvider records a span per recipe operation (lock acquire,
// queue put, campaign, ...) with tp, with the resource's name, kind and
// znode path as attributes and its error recorded. Default: none.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(s *Session) { s.telCfg.Tracer = tp }
}

// WithGlobalTelemetry records metrics and spans with OpenTelemetry's global
// providers (otel.GetMeterProvider, otel.GetTracerProvider) as they are
// when Connect runs. Set them first (otel.SetMeterProvider,
// otel.SetTracerProvider): the API forwards what was created before only
// to the first providers it is given, and until then its no-op ones record
// nothing but still cost the hooks their calls. WithMeterProvider and
// WithTracerProvider given after it replace one of them.
func WithGlobalTelemetry() Option {
	return func(s *Session) {
		s.telCfg.Meter = otel.GetMeterProvider()
		s.telCfg.Tracer = otel.GetTracerProvider()
	}
}

// TelemetryConfig is what the telemetry options set: the providers a
// session's instruments come from (nil: none).
type TelemetryConfig struct {
	Meter  metric.MeterProvider
	Tracer trace.TracerProvider
}

// ScopeMeter returns the meter of the instrumentation scope, from a no-op
// provider when c has none.
func (c TelemetryConfig) ScopeMeter() metric.Meter {
	mp := c.Meter
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	return mp.Meter(InstrumentationName)
}

// Int64Counter makes a counter of m, a no-op one when m gives none; the
// provider's error is appended to errs.
func Int64Counter(m metric.Meter, errs *[]error, name, unit, desc string) metric.Int64Counter {
	c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	if c == nil {
		c, _ = metricnoop.Meter{}.Int64Counter(name)
	}
	*errs = append(*errs, err)
	return c
}

// Attribute keys of the session's counters.
const (
	attrClass  = attribute.Key("zkgen.error.class")
	attrOrigin = attribute.Key("zkgen.session.expiry.origin")
)

// sessionMetrics are the session's own counters. nil: no meter provider.
type sessionMetrics struct {
	retries    metric.Int64Counter
	connLosses metric.Int64Counter
	expiries   metric.Int64Counter
}

// newSessionMetrics builds the session's counters; nil when c sets no meter
// provider. The provider's errors are returned (Connect logs them).
func newSessionMetrics(c TelemetryConfig) (*sessionMetrics, error) {
	if c.Meter == nil {
		return nil, nil
	}
	m, errs := c.ScopeMeter(), []error(nil)
	return &sessionMetrics{
		retries:    Int64Counter(m, &errs, "zkgen.retries", "{retry}", "Operations sent again after a recoverable error (zkgen.error.class recoverable) or a race that called for sending again (normal)."),
		connLosses: Int64Counter(m, &errs, "zkgen.connection.losses", "{loss}", "Connections to ZooKeeper lost while the session lived on (one per outage, not per reconnect attempt)."),
		expiries:   Int64Counter(m, &errs, "zkgen.session.expiries", "{expiry}", "Sessions ended by expiry: told by the server, or given up by the client's own clock."),
	}, JoinErrors(errs...)
}

// retried counts one operation sent again after an error of class c.
func (t *sessionMetrics) retried(c Class) {
	if t == nil {
		return
	}
	t.retries.Add(context.Background(), 1, metric.WithAttributes(attrClass.String(c.String())))
}

// connectionLost counts a connection loss.
func (t *sessionMetrics) connectionLost() {
	if t == nil {
		return
	}
	t.connLosses.Add(context.Background(), 1)
}

// expired counts a session expiry; byClient: given up by the client's
// clock rather than told by the server.
func (t *sessionMetrics) expired(byClient bool) {
	if t == nil {
		return
	}
	origin := "server"
	if byClient {
		origin = "client"
	}
	t.expiries.Add(context.Background(), 1, metric.WithAttributes(attrOrigin.String(origin)))
}
