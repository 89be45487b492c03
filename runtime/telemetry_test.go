package runtime_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
	"github.com/zkgen/zkgen/spec"
)

// Telemetry is checked with the OpenTelemetry SDK itself: a ManualReader
// for metrics and a SpanRecorder for spans, fed by real recipe runs.

// otelSink is an SDK meter and tracer provider pair whose data a test reads.
type otelSink struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	opts   []runtime.Option
}

func newOtelSink(t *testing.T) *otelSink {
	t.Helper()
	o := &otelSink{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(o.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(o.spans))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	o.opts = []runtime.Option{runtime.WithMeterProvider(mp), runtime.WithTracerProvider(tp)}
	return o
}

// metric reads the metric name from the sink (false: nothing recorded).
func (o *otelSink) metric(t *testing.T, name string) (metricdata.Metrics, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := o.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/zkgen/zkgen/runtime" {
			t.Errorf("instrumentation scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// histCount returns the number of values recorded in the histogram name
// with every attribute of want; it checks the unit (s).
func (o *otelSink) histCount(t *testing.T, name string, want ...attribute.KeyValue) uint64 {
	t.Helper()
	m, ok := o.metric(t, name)
	h, isHist := m.Data.(metricdata.Histogram[float64])
	switch {
	case !ok:
		return 0
	case !isHist || m.Unit != "s":
		t.Fatalf("%s is a %T in %q, want a float64 histogram in s", name, m.Data, m.Unit)
	}
	return total(h.DataPoints, want, func(dp metricdata.HistogramDataPoint[float64]) (attribute.Set, uint64) {
		return dp.Attributes, dp.Count
	})
}

// counterSum returns the sum of the counter name over the data points
// with every attribute of want.
func (o *otelSink) counterSum(t *testing.T, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	m, ok := o.metric(t, name)
	c, isSum := m.Data.(metricdata.Sum[int64])
	switch {
	case !ok:
		return 0
	case !isSum || !c.IsMonotonic:
		t.Fatalf("%s is a %T, want a monotonic int64 sum", name, m.Data)
	}
	return total(c.DataPoints, want, func(dp metricdata.DataPoint[int64]) (attribute.Set, int64) { return dp.Attributes, dp.Value })
}

// total sums the values of the data points that have every attribute of
// want.
func total[P any, V uint64 | int64](dps []P, want []attribute.KeyValue, point func(P) (attribute.Set, V)) V {
	var n V
	for _, dp := range dps {
		if attrs, v := point(dp); hasAll(attrs, want) {
			n += v
		}
	}
	return n
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// spansNamed returns the ended spans called name.
func (o *otelSink) spansNamed(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range o.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func spanAttr(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

var (
	keyName = attribute.Key("zkgen.resource.name")
	keyKind = attribute.Key("zkgen.resource.kind")
	keyPath = attribute.Key("zkgen.znode.path")
)

// A contended lock: the second contender waits for the first's release.
// Both acquisitions are in the wait histogram, both tenures in the hold
// histogram, and each acquisition has its span with the resource's name,
// kind and path.
func TestTelemetryLockContended(t *testing.T) {
	srv := server(t)
	o := newOtelSink(t)
	ctx := testCtx(t, 30*time.Second)
	dir := testRoot(t) + "/orders"
	a := runtime.NewLock(connect(t, srv.Servers(), o.opts...), runtime.At(dir), runtime.WithResourceName("orders_lock"))
	b := runtime.NewLock(connect(t, srv.Servers(), o.opts...), runtime.At(dir), runtime.WithResourceName("orders_lock"))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.Lock(ctx) }()
	waitWatchersUnder(t, srv, dir, 1) // b watches a's node: it waits
	if n := o.histCount(t, "zkgen.lock.wait.duration"); n != 1 {
		t.Fatalf("wait histogram count %d while b waits, want 1 (a's acquisition)", n)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	want := []attribute.KeyValue{keyName.String("orders_lock"), keyKind.String("lock")}
	if n := o.histCount(t, "zkgen.lock.wait.duration", want...); n != 2 {
		t.Errorf("wait histogram count %d, want 2", n)
	}
	if n := o.histCount(t, "zkgen.lock.hold.duration", want...); n != 2 {
		t.Errorf("hold histogram count %d, want 2", n)
	}
	if n := o.counterSum(t, "zkgen.tenures.lost"); n != 0 {
		t.Errorf("tenures lost %d, want 0 (both released)", n)
	}
	spans := o.spansNamed("zkgen.lock.acquire")
	if len(spans) != 2 {
		t.Fatalf("%d acquire spans, want 2", len(spans))
	}
	for _, s := range spans {
		for key, want := range map[attribute.Key]string{keyName: "orders_lock", keyKind: "lock", keyPath: dir} {
			if v, ok := spanAttr(s, key); !ok || v.AsString() != want {
				t.Errorf("span %s: %s = %q, want %q", s.Name(), key, v.AsString(), want)
			}
		}
		if s.Status().Code == codes.Error {
			t.Errorf("span %s has error status %q", s.Name(), s.Status().Description)
		}
	}
	if n := len(o.spansNamed("zkgen.lock.release")); n != 2 {
		t.Errorf("%d release spans, want 2", n)
	}
}

// A lock acquisition cut short by its context: the span records the error,
// the wait histogram (acquisitions only) does not count it. A read/write
// lock's sides carry their mode; an unnamed handle is named by its path.
func TestTelemetryLockErrorAndRWLock(t *testing.T) {
	srv := server(t)
	o := newOtelSink(t)
	ctx := testCtx(t, 30*time.Second)
	dir := testRoot(t) + "/tables"
	rw := runtime.NewRWLock(connect(t, srv.Servers(), o.opts...), runtime.At(dir))
	w := rw.Write()
	if err := w.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithCancel(ctx)
	r := rw.Read()
	got := make(chan error, 1)
	go func() { got <- r.Lock(short) }()
	waitWatchersUnder(t, srv, dir, 1)
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("read lock: %v, want context.Canceled", err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if n := o.histCount(t, "zkgen.lock.wait.duration", keyKind.String("rwlock"), attribute.String("zkgen.lock.mode", "write"), keyName.String(dir)); n != 1 {
		t.Errorf("write-side wait count %d, want 1", n)
	}
	if n := o.histCount(t, "zkgen.lock.wait.duration", attribute.String("zkgen.lock.mode", "read")); n != 0 {
		t.Errorf("read-side wait count %d, want 0 (cancelled)", n)
	}
	var failed int
	for _, s := range o.spansNamed("zkgen.lock.acquire") {
		if s.Status().Code != codes.Error {
			continue
		}
		failed++
		if v, _ := spanAttr(s, attribute.Key("zkgen.lock.mode")); v.AsString() != "read" {
			t.Errorf("failed span's mode %q, want read", v.AsString())
		}
		var recorded bool
		for _, ev := range s.Events() {
			recorded = recorded || ev.Name == "exception"
		}
		if !recorded {
			t.Errorf("failed span has no exception event: %v", s.Events())
		}
	}
	if failed != 1 {
		t.Errorf("%d failed acquire spans, want 1", failed)
	}
}

// Queue puts and takes are timed, one value per call.
func TestTelemetryQueue(t *testing.T) {
	srv := server(t)
	o := newOtelSink(t)
	ctx := testCtx(t, 30*time.Second)
	q := runtime.NewQueue(connect(t, srv.Servers(), o.opts...), runtime.At(testRoot(t)+"/jobs"), runtime.StringCodec(), runtime.WithResourceName("jobs"))
	for _, it := range []string{"a", "b", "c"} {
		if err := q.Put(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, err := q.Take(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := []attribute.KeyValue{keyName.String("jobs"), keyKind.String("queue"), attribute.String("zkgen.outcome", "ok")}
	if n := o.histCount(t, "zkgen.queue.put.duration", want...); n != 3 {
		t.Errorf("put count %d, want 3", n)
	}
	if n := o.histCount(t, "zkgen.queue.take.duration", want...); n != 3 {
		t.Errorf("take count %d, want 3", n)
	}
	if n := len(o.spansNamed("zkgen.queue.put")) + len(o.spansNamed("zkgen.queue.take")); n != 6 {
		t.Errorf("%d queue spans, want 6", n)
	}

	aq := runtime.NewAckQueue(connect(t, srv.Servers(), o.opts...), runtime.At(testRoot(t)+"/acked"), runtime.StringCodec(), runtime.WithResourceName("acked"))
	for _, it := range []string{"x", "y"} {
		if err := aq.Put(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	d1, err := aq.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d1.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	d2, err := aq.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d2.Release(ctx); err == nil {
		t.Fatal("a second Release succeeded")
	}
	d3, err := aq.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d3.GiveBack(ctx); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"zkgen.queue.ack": 1, "zkgen.queue.release": 2, "zkgen.queue.give_back": 1} {
		if n := len(o.spansNamed(name)); n != want {
			t.Errorf("%d %s spans, want %d", n, name, want)
		}
	}
	var failed int
	for _, sp := range o.spansNamed("zkgen.queue.release") {
		if sp.Status().Code == codes.Error {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d failed release spans, want 1 (the second Release)", failed)
	}
}

// A priority queue's puts, takes and acks are recorded as the priority
// queue's (kind priority_queue, its name), one per call: not per priority
// looked at (the take of the bulk item finds the urgent priority empty).
func TestTelemetryPriorityQueue(t *testing.T) {
	srv := server(t)
	o := newOtelSink(t)
	ctx := testCtx(t, 30*time.Second)
	q := runtime.NewAckPriorityQueue(connect(t, srv.Servers(), o.opts...), runtime.At(testRoot(t)+"/tasks"), runtime.StringCodec(), 2, runtime.WithResourceName("tasks"))
	if err := q.Put(ctx, 1, "bulk"); err != nil {
		t.Fatal(err)
	}
	if err := q.Put(ctx, 0, "urgent"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"urgent", "bulk"} {
		d, err := q.Take(ctx)
		if err != nil || d.Value != want {
			t.Fatalf("Take = %v, %v; want %s", d, err, want)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := []attribute.KeyValue{keyName.String("tasks"), keyKind.String("priority_queue"), attribute.String("zkgen.outcome", "ok")}
	for _, h := range []string{"zkgen.queue.put.duration", "zkgen.queue.take.duration"} {
		if n := o.histCount(t, h, want...); n != 2 {
			t.Errorf("%s count %d, want 2", h, n)
		}
	}
	for name, want := range map[string]int{"zkgen.queue.put": 2, "zkgen.queue.take": 2, "zkgen.queue.ack": 2} {
		spans := o.spansNamed(name)
		if len(spans) != want {
			t.Errorf("%d %s spans, want %d", len(spans), name, want)
		}
		for _, sp := range spans {
			if sp.Status().Code == codes.Error {
				t.Errorf("%s span failed: %v", name, sp.Status())
			}
		}
	}
}

// A leader resigns and the waiting candidate takes over: the new leader
// records the failover; the first leader, which never waited, does not.
func TestTelemetryElectionFailover(t *testing.T) {
	srv := server(t)
	o := newOtelSink(t)
	ctx := testCtx(t, 30*time.Second)
	dir := testRoot(t) + "/scheduler"
	a := runtime.NewElection(connect(t, srv.Servers(), o.opts...), runtime.At(dir), runtime.StringCodec(), runtime.WithResourceName("scheduler"))
	b := runtime.NewElection(connect(t, srv.Servers(), o.opts...), runtime.At(dir), runtime.StringCodec(), runtime.WithResourceName("scheduler"))
	la, err := a.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		lb, err := b.Campaign(ctx, "b")
		if err == nil {
			err = lb.Resign(ctx)
		}
		got <- err
	}()
	waitWatchersUnder(t, srv, dir, 1) // b watches a's candidate node
	if n := o.histCount(t, "zkgen.election.failover.duration"); n != 0 {
		t.Fatalf("failover count %d before any failover, want 0", n)
	}
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if n := o.histCount(t, "zkgen.election.failover.duration", keyName.String("scheduler"), keyKind.String("election")); n != 1 {
		t.Errorf("failover count %d, want 1", n)
	}
	if n := len(o.spansNamed("zkgen.election.campaign")); n != 2 {
		t.Errorf("%d campaign spans, want 2", n)
	}
}

// A connection cut while the session lives on counts one connection loss;
// the session is not expired.
func TestTelemetryConnectionLoss(t *testing.T) {
	srv := server(t)
	o := newOtelSink(t)
	ctx := testCtx(t, 30*time.Second)
	p := zktest.NewProxy(t, srv.Addr())
	s := connect(t, viaProxy(p), o.opts...)
	if n := o.counterSum(t, "zkgen.connection.losses"); n != 0 {
		t.Fatalf("connection losses %d before the cut, want 0", n)
	}
	p.CutAll()
	// A read that succeeds after the cut was answered on a new
	// connection: go-zookeeper reports the disconnection (on its event
	// loop, which counts it) before it reconnects.
	if _, err := s.Exists(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	if n := o.counterSum(t, "zkgen.connection.losses"); n != 1 {
		t.Errorf("connection losses %d, want 1", n)
	}
	if n := o.counterSum(t, "zkgen.session.expiries"); n != 0 {
		t.Errorf("expiries %d, want 0", n)
	}
}

// A read whose reply is lost to a cut connection is sent again, and
// counted as a retry of class recoverable.
func TestTelemetryRetryCounted(t *testing.T) {
	srv := server(t)
	o := newOtelSink(t)
	ctx := testCtx(t, 30*time.Second)
	p := zktest.NewProxy(t, srv.Addr())
	f := faultyClient{p: p, s: connect(t, viaProxy(p), o.opts...)}
	if err := f.inject(t, ctx, srv, zktest.OpGetData, cut, nil, func() error {
		_, err := f.s.Exists(ctx, "/")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n := o.counterSum(t, "zkgen.retries", attribute.String("zkgen.error.class", "recoverable")); n < 1 {
		t.Errorf("recoverable retries %d, want at least 1", n)
	}
}

// A session expired by the server counts one expiry (origin server) and
// one lost tenure per tenure it held, by recipe (a lock, a group
// membership, a partitioner membership); the hold time of the lost
// lock is recorded too.
func TestTelemetryExpiry(t *testing.T) {
	srv := server(t)
	o := newOtelSink(t)
	ctx := testCtx(t, 30*time.Second)
	f := faultyClient{p: zktest.NewProxy(t, srv.Addr())}
	f.s = connect(t, viaProxy(f.p), o.opts...)
	root := testRoot(t)
	l := runtime.NewLock(f.s, runtime.At(root+"/lock"), runtime.WithResourceName("guard"))
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	g := runtime.NewGroup(f.s, runtime.At(root+"/workers"), runtime.StringCodec(), runtime.WithResourceName("workers"))
	m, err := g.Join(ctx, "w1")
	if err != nil {
		t.Fatal(err)
	}
	a, err := runtime.NewPartitioner(f.s, runtime.At(root+"/shards"), 2, runtime.StringCodec(), runtime.WithResourceName("shards")).Join(ctx, "m1")
	if err != nil {
		t.Fatal(err)
	}
	f.expire(t, srv)
	<-f.s.Done()
	<-l.Lost()
	<-m.Lost()
	<-a.Lost()
	if !errors.Is(f.s.Err(), runtime.ErrSessionExpired) {
		t.Fatalf("session ended with %v, want ErrSessionExpired", f.s.Err())
	}
	if n := o.counterSum(t, "zkgen.session.expiries", attribute.String("zkgen.session.expiry.origin", "server")); n != 1 {
		t.Errorf("server expiries %d, want 1", n)
	}
	if n := o.counterSum(t, "zkgen.tenures.lost", keyName.String("guard"), keyKind.String("lock")); n != 1 {
		t.Errorf("lost locks %d, want 1", n)
	}
	if n := o.counterSum(t, "zkgen.tenures.lost", keyName.String("workers"), keyKind.String("group")); n != 1 {
		t.Errorf("lost memberships %d, want 1", n)
	}
	if n := o.counterSum(t, "zkgen.tenures.lost", keyName.String("shards"), keyKind.String("partitioner")); n != 1 {
		t.Errorf("lost partitioner memberships %d, want 1", n)
	}
	if n := o.histCount(t, "zkgen.lock.hold.duration", keyName.String("guard")); n != 1 {
		t.Errorf("hold count %d, want 1 (the lost tenure)", n)
	}
}

// The other timed recipes: a semaphore's wait and hold (its own internal
// lock records nothing), a barrier's wait, a double barrier's enter and
// leave, a two-phase commit's round.
func TestTelemetryOtherRecipes(t *testing.T) {
	srv := server(t)
	o := newOtelSink(t)
	ctx := testCtx(t, 30*time.Second)
	s := connect(t, srv.Servers(), o.opts...)
	root := testRoot(t)

	lease, err := runtime.NewSemaphore(s, runtime.At(root+"/slots"), 2, runtime.WithResourceName("slots")).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	sem := []attribute.KeyValue{keyName.String("slots"), keyKind.String("semaphore")}
	if n := o.histCount(t, "zkgen.semaphore.wait.duration", sem...); n != 1 {
		t.Errorf("semaphore wait count %d, want 1", n)
	}
	if n := o.histCount(t, "zkgen.semaphore.hold.duration", sem...); n != 1 {
		t.Errorf("semaphore hold count %d, want 1", n)
	}
	if n := o.histCount(t, "zkgen.lock.wait.duration"); n != 0 {
		t.Errorf("lock wait count %d, want 0 (the semaphore's own lock is not a lock resource)", n)
	}

	b := runtime.NewBarrier(s, runtime.At(root+"/gate"), runtime.WithResourceName("gate"))
	if err := b.Raise(ctx); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- b.Wait(ctx) }()
	waitWatchers(t, srv, root+"/gate", 1)
	if err := b.Lower(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if n := o.histCount(t, "zkgen.barrier.wait.duration", keyName.String("gate"), keyKind.String("barrier")); n != 1 {
		t.Errorf("barrier wait count %d, want 1", n)
	}

	d := runtime.NewDoubleBarrier(s, runtime.At(root+"/epoch"), 1, runtime.WithResourceName("epoch"))
	if err := d.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{"enter", "leave"} {
		if n := o.histCount(t, "zkgen.barrier.wait.duration", keyKind.String("double_barrier"), attribute.String("zkgen.barrier.phase", phase)); n != 1 {
			t.Errorf("double barrier %s count %d, want 1", phase, n)
		}
	}

	tx := runtime.NewTwoPhaseCommit(s, runtime.At(root+"/tx"), runtime.StringCodec(), []runtime.Participant{"db"}, runtime.WithResourceName("deploy"))
	if err := tx.Propose(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Join(ctx, "db"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Vote(ctx, "db", runtime.Commit); err != nil {
		t.Fatal(err)
	}
	if dec, err := tx.Coordinate(ctx); err != nil || dec != runtime.Commit {
		t.Fatalf("Coordinate = %v, %v; want Commit", dec, err)
	}
	if n := o.histCount(t, "zkgen.twopc.round.duration", keyName.String("deploy"), keyKind.String("two_phase_commit")); n != 1 {
		t.Errorf("2PC round count %d, want 1", n)
	}
	for _, name := range []string{"zkgen.semaphore.acquire", "zkgen.barrier.raise", "zkgen.barrier.wait", "zkgen.barrier.lower",
		"zkgen.barrier.enter", "zkgen.barrier.leave", "zkgen.twopc.propose", "zkgen.twopc.join", "zkgen.twopc.vote", "zkgen.twopc.coordinate"} {
		if n := len(o.spansNamed(name)); n != 1 {
			t.Errorf("%d %s spans, want 1", n, name)
		}
	}
}

// A session cut off without a word (its traffic black-holed) is given up
// by its own clock: one expiry of origin client, after one connection
// loss, and the semaphore lease it held is counted lost.
func TestTelemetryClientGivesUp(t *testing.T) {
	srv := server(t)
	o := newOtelSink(t)
	ctx := testCtx(t, time.Minute)
	p := zktest.NewProxy(t, srv.Addr())
	s := connect(t, []string{p.Addr()}, append(o.opts, runtime.WithSessionTimeout(2*time.Second))...)
	lease, err := runtime.NewSemaphore(s, runtime.At(testRoot(t)+"/slots"), 1, runtime.WithResourceName("slots")).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.Blackhole(true)
	defer p.Blackhole(false)
	<-s.Done()
	<-lease.Lost()
	if !errors.Is(s.Err(), runtime.ErrSessionExpired) {
		t.Fatalf("session ended with %v, want ErrSessionExpired", s.Err())
	}
	if n := o.counterSum(t, "zkgen.session.expiries", attribute.String("zkgen.session.expiry.origin", "client")); n != 1 {
		t.Errorf("client expiries %d, want 1", n)
	}
	if n := o.counterSum(t, "zkgen.session.expiries", attribute.String("zkgen.session.expiry.origin", "server")); n != 0 {
		t.Errorf("server expiries %d, want 0", n)
	}
	if n := o.counterSum(t, "zkgen.connection.losses"); n != 1 {
		t.Errorf("connection losses %d, want 1", n)
	}
	if n := o.counterSum(t, "zkgen.tenures.lost", keyName.String("slots"), keyKind.String("semaphore")); n != 1 {
		t.Errorf("lost leases %d, want 1", n)
	}
}

// WithGlobalTelemetry records with OpenTelemetry's global providers.
func TestTelemetryGlobalProviders(t *testing.T) {
	srv := server(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	otel.SetMeterProvider(mp)
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetMeterProvider(metricnoop.NewMeterProvider())
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	o := &otelSink{reader: reader, spans: spans}
	ctx := testCtx(t, 30*time.Second)
	l := runtime.NewLock(connect(t, srv.Servers(), runtime.WithGlobalTelemetry()), runtime.At(testRoot(t)))
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if n := o.histCount(t, "zkgen.lock.wait.duration"); n != 1 {
		t.Errorf("wait count %d, want 1", n)
	}
	if n := len(o.spansNamed("zkgen.lock.acquire")); n != 1 {
		t.Errorf("%d acquire spans, want 1", n)
	}
}

// Supervise passes the telemetry options to every session it opens: a
// lock taken on the first session, lost with its expiry, and taken again
// on the next one, is counted across both.
func TestTelemetrySupervise(t *testing.T) {
	srv := server(t)
	o := newOtelSink(t)
	ctx := testCtx(t, time.Minute)
	p := zktest.NewProxy(t, srv.Addr())
	dir := testRoot(t)
	runs := 0
	err := runtime.Supervise(ctx, viaProxy(p), func(sctx context.Context, s *runtime.Session) error {
		runs++
		l := runtime.NewLock(s, runtime.At(dir), runtime.WithResourceName("guard"))
		if err := l.Lock(sctx); err != nil {
			return err
		}
		if runs > 1 {
			return l.Unlock(sctx)
		}
		creds, ok := p.Session(s.ID())
		if !ok {
			return errors.New("proxy did not see the session")
		}
		p.Pause(true) // hold the reconnection while the server expires it
		zktest.ExpireSession(t, srv.Servers(), creds.ID, creds.Passwd)
		p.Pause(false)
		<-sctx.Done()
		return context.Cause(sctx)
	}, append(o.opts, runtime.WithSessionTimeout(10*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	if runs != 2 {
		t.Fatalf("fn ran %d times, want 2", runs)
	}
	if n := o.histCount(t, "zkgen.lock.wait.duration", keyName.String("guard")); n != 2 {
		t.Errorf("wait count %d, want 2 (one per session)", n)
	}
	if n := o.counterSum(t, "zkgen.session.expiries"); n != 1 {
		t.Errorf("expiries %d, want 1", n)
	}
	if n := o.counterSum(t, "zkgen.tenures.lost", keyName.String("guard")); n != 1 {
		t.Errorf("lost locks %d, want 1", n)
	}
}

// Every other recipe operation has its span, named after it, with the
// resource's name, kind (the spec's name of the kind) and path, and no
// error status when it succeeds; a counter's own config reads and writes
// record nothing of their own, and LockAll's members' acquisitions are
// children of its span. A TTL lease
// whose node was deleted by someone else fails its Renew: an error span
// and one lost tenure. A partitioner member counts the partitions it
// acquires; a TTL lease acquisition is timed.
func TestTelemetryOperationSpans(t *testing.T) {
	srv := ttlServer(t)
	o := newOtelSink(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers(), o.opts...)
	root := testRoot(t)
	at := func(name string) runtime.Path { return runtime.At(root + "/" + name) }
	cfg := runtime.NewConfig(s, at("flags"), runtime.StringCodec(), runtime.WithResourceName("flags"))
	hits := runtime.NewCounter(s, at("hits"), runtime.WithResourceName("hits"))
	grp := runtime.NewGroup(s, at("workers"), runtime.StringCodec(), runtime.WithResourceName("workers"))
	el := runtime.NewElection(s, at("primary"), runtime.StringCodec(), runtime.WithResourceName("primary"))
	sem := runtime.NewSemaphore(s, at("slots"), 1, runtime.WithResourceName("slots"))
	leases := runtime.NewTTLLeases(s, at("leases"), 2, time.Minute, runtime.WithResourceName("leases"))
	part := runtime.NewPartitioner(s, at("shards"), 2, runtime.StringCodec(), runtime.WithResourceName("shards"))
	lockA := runtime.NewLock(s, at("a"), runtime.WithResourceName("a"))
	lockB := runtime.NewLock(s, at("b"))
	var (
		member *runtime.Membership[string]
		lease  *runtime.TTLLease
		assign *runtime.Assignment[string]
	)
	steps := []struct {
		span, name, kind, path string
		run                    func() error
	}{
		{"zkgen.config.set", "flags", "config", root + "/flags", func() error { _, err := cfg.Set(ctx, "on"); return err }},
		{"zkgen.config.get", "flags", "config", root + "/flags", func() error { _, _, err := cfg.Get(ctx); return err }},
		{"zkgen.config.compare_and_set", "flags", "config", root + "/flags", func() error { _, err := cfg.CompareAndSet(ctx, "off", 0); return err }},
		{"zkgen.config.delete", "flags", "config", root + "/flags", func() error { return cfg.Delete(ctx) }},
		{"zkgen.counter.add", "hits", "counter", root + "/hits", func() error { _, err := hits.Add(ctx, 2); return err }},
		{"zkgen.counter.get", "hits", "counter", root + "/hits", func() error { _, err := hits.Get(ctx); return err }},
		{"zkgen.group.join", "workers", "group", root + "/workers", func() (err error) { member, err = grp.Join(ctx, "w1"); return err }},
		{"zkgen.group.leave", "workers", "group", root + "/workers", func() error { return member.Leave(ctx) }},
		{"zkgen.election.resign", "primary", "election", root + "/primary", func() error {
			l, err := el.Campaign(ctx, "me")
			if err != nil {
				return err
			}
			return l.Resign(ctx)
		}},
		{"zkgen.semaphore.release", "slots", "semaphore", root + "/slots", func() error {
			le, err := sem.Acquire(ctx)
			if err != nil {
				return err
			}
			return le.Release(ctx)
		}},
		{"zkgen.lease.acquire", "leases", "lease", root + "/leases", func() (err error) { lease, err = leases.Acquire(ctx, "h1"); return err }},
		{"zkgen.lease.renew", "leases", "lease", root + "/leases", func() error { return lease.Renew(ctx) }},
		{"zkgen.lease.release", "leases", "lease", root + "/leases", func() error { return lease.Release(ctx) }},
		{"zkgen.partitioner.join", "shards", "partitioner", root + "/shards", func() (err error) {
			if assign, err = part.Join(ctx, "m1", runtime.WithRebalanceDelay(0)); err != nil {
				return err
			}
			owned := assign.Owned()
			for got := range owned {
				if len(got) == 2 {
					break
				}
			}
			go func() {
				for range owned { // read on, so that Leave's releases need not wait
				}
			}()
			return nil
		}},
		{"zkgen.partitioner.leave", "shards", "partitioner", root + "/shards", func() error { return assign.Leave(ctx) }},
		{"zkgen.lock.all", "a," + root + "/b", "multi_lock", root + "/a," + root + "/b", func() error {
			g, err := runtime.LockAll(ctx, lockB, lockA)
			if err != nil {
				return err
			}
			return g.Unlock(ctx)
		}},
	}
	for _, st := range steps {
		if err := st.run(); err != nil {
			t.Fatalf("%s: %v", st.span, err)
		}
	}
	for _, st := range steps {
		if st.kind != "multi_lock" && !slices.Contains(spec.Kinds, spec.Kind(st.kind)) {
			t.Errorf("span %s: kind %q is not a spec kind", st.span, st.kind)
		}
		spans := o.spansNamed(st.span)
		if len(spans) != 1 {
			t.Errorf("%d %s spans, want 1", len(spans), st.span)
			continue
		}
		for key, want := range map[attribute.Key]string{keyName: st.name, keyKind: st.kind, keyPath: st.path} {
			if v, _ := spanAttr(spans[0], key); v.AsString() != want {
				t.Errorf("span %s: %s = %q, want %q", st.span, key, v.AsString(), want)
			}
		}
		if spans[0].Status().Code == codes.Error {
			t.Errorf("span %s has error status %q", st.span, spans[0].Status().Description)
		}
	}
	if all := o.spansNamed("zkgen.lock.all"); len(all) == 1 {
		var children int
		for _, sp := range o.spansNamed("zkgen.lock.acquire") {
			if sp.Parent().SpanID() == all[0].SpanContext().SpanID() {
				children++
			}
		}
		if children != 2 {
			t.Errorf("%d lock acquisitions under the zkgen.lock.all span, want 2", children)
		}
	}
	if n := o.counterSum(t, "zkgen.partitioner.acquisitions", keyName.String("shards"), keyKind.String("partitioner")); n != 2 {
		t.Errorf("partitions acquired %d, want 2", n)
	}
	if n := o.histCount(t, "zkgen.lease.wait.duration", keyName.String("leases"), keyKind.String("lease")); n != 1 {
		t.Errorf("lease wait count %d, want 1", n)
	}

	lost, err := leases.Acquire(ctx, "h2")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Conn().Delete(lost.Node(), -1); err != nil {
		t.Fatal(err)
	}
	if err := lost.Renew(ctx); !errors.Is(err, runtime.ErrLeaseExpired) {
		t.Fatalf("Renew of a deleted lease: %v, want ErrLeaseExpired", err)
	}
	var failed []sdktrace.ReadOnlySpan
	for _, sp := range o.spansNamed("zkgen.lease.renew") {
		if sp.Status().Code == codes.Error {
			failed = append(failed, sp)
		}
	}
	if len(failed) != 1 || len(failed[0].Events()) == 0 || failed[0].Events()[0].Name != "exception" {
		t.Errorf("failed renew spans %v, want 1 with an exception event", failed)
	}
	if n := o.counterSum(t, "zkgen.tenures.lost", keyName.String("leases"), keyKind.String("lease")); n != 1 {
		t.Errorf("lost leases %d, want 1", n)
	}
	if err := lost.Renew(ctx); !errors.Is(err, runtime.ErrLeaseExpired) {
		t.Fatalf("second Renew: %v, want ErrLeaseExpired", err)
	}
	if n := o.counterSum(t, "zkgen.tenures.lost", keyKind.String("lease")); n != 1 {
		t.Errorf("lost leases %d after a second failed Renew, want 1 (one lease)", n)
	}
}

// An item released as often as dead_letter_after allows is counted once in
// zkgen.queue.dead_lettered, by the consumer that moved it, under its
// queue's kind (queue, delay_queue).
func TestTelemetryDeadLettered(t *testing.T) {
	srv := server(t)
	for _, tc := range []struct {
		kind string
		take func(ctx context.Context, s *runtime.Session, dir string) (func(context.Context) (*runtime.Delivery[string], error), error)
	}{
		{"queue", func(ctx context.Context, s *runtime.Session, dir string) (func(context.Context) (*runtime.Delivery[string], error), error) {
			q := runtime.NewAckQueue(s, runtime.At(dir), runtime.StringCodec(), runtime.WithResourceName("acked"), runtime.WithDeadLetterAfter(2))
			return q.Take, q.Put(ctx, "poison")
		}},
		{"delay_queue", func(ctx context.Context, s *runtime.Session, dir string) (func(context.Context) (*runtime.Delivery[string], error), error) {
			q := runtime.NewAckDelayQueue(s, runtime.At(dir), runtime.StringCodec(), runtime.WithResourceName("acked"), runtime.WithDeadLetterAfter(2))
			return q.Take, q.Put(ctx, "poison", time.Now().Add(-time.Minute))
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			o := newOtelSink(t)
			ctx := testCtx(t, 30*time.Second)
			take, err := tc.take(ctx, connect(t, srv.Servers(), o.opts...), testRoot(t)+"/acked")
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 2; i++ {
				if n := o.counterSum(t, "zkgen.queue.dead_lettered"); n != 0 {
					t.Fatalf("dead-lettered %d before delivery %d was released, want 0", n, i)
				}
				d, err := take(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := d.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if n := o.counterSum(t, "zkgen.queue.dead_lettered", keyName.String("acked"), keyKind.String(tc.kind)); n != 1 {
				t.Errorf("dead-lettered %d, want 1", n)
			}
		})
	}
}

// Peek, Stats, DeadLetters, Claims, Requeue and Discard record one span each, as
// the queue's kind; a priority queue's Peek and Stats record one span, not
// one per level.
func TestTelemetryQueueInspectionSpans(t *testing.T) {
	srv := server(t)
	o := newOtelSink(t)
	ctx := testCtx(t, 30*time.Second)
	s := connect(t, srv.Servers(), o.opts...)
	q := runtime.NewAckQueue(s, runtime.At(testRoot(t)+"/acked"), runtime.StringCodec(), runtime.WithResourceName("acked"), runtime.WithDeadLetterAfter(1))
	poison := func() {
		t.Helper()
		d, err := q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Release(ctx); err != nil { // the first release moves it: dead_letter_after 1
			t.Fatal(err)
		}
	}
	dead := func() *runtime.DeadLetter[string] {
		t.Helper()
		ds, err := q.DeadLetters(ctx)
		if err != nil || len(ds) != 1 {
			t.Fatalf("DeadLetters = %v, %v; want one", ds, err)
		}
		return ds[0]
	}
	if err := q.Put(ctx, "poison"); err != nil {
		t.Fatal(err)
	}
	poison()
	if err := dead().Requeue(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := q.Peek(ctx); err != nil || !ok {
		t.Fatalf("Peek = %v, %v", ok, err)
	}
	if _, err := q.Stats(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Claims(ctx); err != nil {
		t.Fatal(err)
	}
	poison()
	if err := dead().Discard(ctx); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"zkgen.queue.peek": 1, "zkgen.queue.stats": 1, "zkgen.queue.dead_letters": 2,
		"zkgen.queue.claims": 1, "zkgen.queue.requeue": 1, "zkgen.queue.discard": 1} {
		spans := o.spansNamed(name)
		if len(spans) != want {
			t.Errorf("%d %s spans, want %d", len(spans), name, want)
		}
		for _, sp := range spans {
			if v, _ := spanAttr(sp, keyKind); v.AsString() != "queue" {
				t.Errorf("%s kind %q, want queue", name, v.AsString())
			}
			if v, _ := spanAttr(sp, keyName); v.AsString() != "acked" {
				t.Errorf("%s name %q, want acked", name, v.AsString())
			}
		}
	}

	pq := runtime.NewPriorityQueue(s, runtime.At(testRoot(t)+"/prio"), runtime.StringCodec(), 3, runtime.WithResourceName("prio"))
	if _, _, err := pq.Peek(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pq.Stats(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"zkgen.queue.peek", "zkgen.queue.stats"} {
		n := 0
		for _, sp := range o.spansNamed(name) {
			if v, _ := spanAttr(sp, keyKind); v.AsString() == "priority_queue" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d priority_queue %s spans, want 1", n, name)
		}
	}
}
