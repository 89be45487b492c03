package runtime

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// --- Recipe telemetry
//
// The recipes' spans and instruments, built from the session's providers
// (WithMeterProvider, WithTracerProvider, WithGlobalTelemetry) on first
// use. A session given none has a nil *telemetry, every hook is a method
// that returns at once on a nil receiver, and nothing is recorded, timed
// or allocated. The machinery and the table of operations are here; each
// family's own hooks are beside its code (lockOp in lock.go, tenure's in
// tenure.go, failover in election.go, partitionAcquired in partitioner.go,
// deadLettered in queue_dead.go), and recipes call them in one line each.
// The instruments and their attributes are listed in docs/telemetry.md.

// WithResourceName names the spec resource a handle stands for: it is the
// zkgen.resource.name attribute of the handle's metrics and spans (without
// it, the handle's directory path is used). Generated handles pass the
// resource's spec name. It is accepted by every handle constructor.
func WithResourceName(name string) ResourceName { return ResourceName{name: name} }

// ResourceName is the option WithResourceName returns; it is a LockOption,
// a QueueOption, a TwoPCOption and a HandleOption.
type ResourceName struct{ name string }

func (o ResourceName) applyHandle(c *handleConfig) { c.name = o.name }

// Attribute keys.
const (
	attrName   = attribute.Key("zkgen.resource.name")
	attrKind   = attribute.Key("zkgen.resource.kind")
	attrPath   = attribute.Key("zkgen.znode.path")
	attrMode   = attribute.Key("zkgen.lock.mode")
	attrPhase  = attribute.Key("zkgen.barrier.phase")
	attrStatus = attribute.Key("zkgen.outcome")
)

// op is a recipe operation: its span name and the histogram of its
// duration (histNone: a span only).
type op int

const (
	opLockAcquire op = iota
	opLockRelease
	opSemAcquire
	opQueuePut
	opQueueTake
	opCampaign
	opBarrierWait
	opBarrierEnter
	opBarrierLeave
	opCoordinate
	opPropose
	opJoin
	opVote
	opRaise
	opLower
	opAck
	opRelease
	opGiveBack
	opConfigGet
	opConfigSet
	opConfigCAS
	opConfigDelete
	opCounterGet
	opCounterAdd
	opGroupJoin
	opGroupLeave
	opResign
	opSemRelease
	opLeaseAcquire
	opLeaseRenew
	opLeaseRelease
	opLockAll
	opPartitionerJoin
	opPartitionerLeave
	opPeek
	opStats
	opDeadLetters
	opClaims
	opRequeue
	opDiscard
	numOps
)

// hist indexes the session's duration histograms.
type hist int

const (
	histNone hist = iota - 1
	histLockWait
	histLockHold
	histSemWait
	histSemHold
	histQueuePut
	histQueueTake
	histFailover
	histBarrierWait
	histTwoPCRound
	histLeaseWait
	numHists
)

var opInfo = [numOps]struct {
	span string
	hist hist
}{
	opLockAcquire:  {"zkgen.lock.acquire", histLockWait},
	opLockRelease:  {"zkgen.lock.release", histNone},
	opSemAcquire:   {"zkgen.semaphore.acquire", histSemWait},
	opQueuePut:     {"zkgen.queue.put", histQueuePut},
	opQueueTake:    {"zkgen.queue.take", histQueueTake},
	opCampaign:     {"zkgen.election.campaign", histNone},
	opBarrierWait:  {"zkgen.barrier.wait", histBarrierWait},
	opBarrierEnter: {"zkgen.barrier.enter", histBarrierWait},
	opBarrierLeave: {"zkgen.barrier.leave", histBarrierWait},
	opCoordinate:   {"zkgen.twopc.coordinate", histTwoPCRound},
	opPropose:      {"zkgen.twopc.propose", histNone},
	opJoin:         {"zkgen.twopc.join", histNone},
	opVote:         {"zkgen.twopc.vote", histNone},
	opRaise:        {"zkgen.barrier.raise", histNone},
	opLower:        {"zkgen.barrier.lower", histNone},
	opAck:          {"zkgen.queue.ack", histNone},
	opRelease:      {"zkgen.queue.release", histNone},
	opGiveBack:     {"zkgen.queue.give_back", histNone},

	opConfigGet:        {"zkgen.config.get", histNone},
	opConfigSet:        {"zkgen.config.set", histNone},
	opConfigCAS:        {"zkgen.config.compare_and_set", histNone},
	opConfigDelete:     {"zkgen.config.delete", histNone},
	opCounterGet:       {"zkgen.counter.get", histNone},
	opCounterAdd:       {"zkgen.counter.add", histNone},
	opGroupJoin:        {"zkgen.group.join", histNone},
	opGroupLeave:       {"zkgen.group.leave", histNone},
	opResign:           {"zkgen.election.resign", histNone},
	opSemRelease:       {"zkgen.semaphore.release", histNone},
	opLeaseAcquire:     {"zkgen.lease.acquire", histLeaseWait},
	opLeaseRenew:       {"zkgen.lease.renew", histNone},
	opLeaseRelease:     {"zkgen.lease.release", histNone},
	opLockAll:          {"zkgen.lock.all", histNone},
	opPartitionerJoin:  {"zkgen.partitioner.join", histNone},
	opPartitionerLeave: {"zkgen.partitioner.leave", histNone},
	opPeek:             {"zkgen.queue.peek", histNone},
	opStats:            {"zkgen.queue.stats", histNone},
	opDeadLetters:      {"zkgen.queue.dead_letters", histNone},
	opClaims:           {"zkgen.queue.claims", histNone},
	opRequeue:          {"zkgen.queue.requeue", histNone},
	opDiscard:          {"zkgen.queue.discard", histNone},
}

// histInfo names the histograms (unit s).
var histInfo = [numHists]struct{ name, desc string }{
	histLockWait:    {"zkgen.lock.wait.duration", "Time from Lock or TryLock to holding the lock (acquisitions only)."},
	histLockHold:    {"zkgen.lock.hold.duration", "Time a lock was held, until Unlock or loss."},
	histSemWait:     {"zkgen.semaphore.wait.duration", "Time from Acquire to holding a lease (acquisitions only)."},
	histSemHold:     {"zkgen.semaphore.hold.duration", "Time a semaphore lease was held, until Release or loss."},
	histQueuePut:    {"zkgen.queue.put.duration", "Duration of a queue Put or PutAll."},
	histQueueTake:   {"zkgen.queue.take.duration", "Duration of a queue Take or TakeN, waiting for an item included."},
	histFailover:    {"zkgen.election.failover.duration", "Time without a leader as seen by a new leader: from the wake-up that found its candidate first to its acknowledgement."},
	histBarrierWait: {"zkgen.barrier.wait.duration", "Time a barrier Wait, or a double barrier Enter or Leave, blocked."},
	histTwoPCRound:  {"zkgen.twopc.round.duration", "Duration of a two-phase commit Coordinate: from the call to the decision."},
	histLeaseWait:   {"zkgen.lease.wait.duration", "Time from a TTL lease's Acquire to holding the lease (acquisitions only)."},
}

// durationBuckets are the histograms' bucket boundaries, in seconds: from
// a millisecond (one round trip on a LAN) to five minutes.
var durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// telemetry is a session's instruments. nil: none configured.
type telemetry struct {
	tracer      trace.Tracer // nil: no tracer provider
	hists       [numHists]metric.Float64Histogram
	tenuresLost metric.Int64Counter
	partitions  metric.Int64Counter
	deadLetters metric.Int64Counter
}

// newTelemetry builds the instruments of c; nil when c sets no provider.
// The provider's errors are returned (Connect logs them); an instrument it
// does not give is replaced by a no-op one.
func newTelemetry(c client.TelemetryConfig) (*telemetry, error) {
	if c.Meter == nil && c.Tracer == nil {
		return nil, nil
	}
	t := &telemetry{}
	if c.Tracer != nil {
		t.tracer = c.Tracer.Tracer(client.InstrumentationName)
	}
	m := c.ScopeMeter()
	noop := metricnoop.Meter{}
	var errs []error
	for i, h := range histInfo {
		var err error
		t.hists[i], err = m.Float64Histogram(h.name, metric.WithUnit("s"), metric.WithDescription(h.desc),
			metric.WithExplicitBucketBoundaries(durationBuckets...))
		if t.hists[i] == nil {
			t.hists[i], _ = noop.Float64Histogram(h.name)
		}
		errs = append(errs, err)
	}
	t.tenuresLost = client.Int64Counter(m, &errs, "zkgen.tenures.lost", "{tenure}", "Tenures (locks, leases, leaderships, memberships) that ended by loss, not release.")
	t.partitions = client.Int64Counter(m, &errs, "zkgen.partitioner.acquisitions", "{partition}", "Partitions a partitioner member became the owner of: its first share and every partition moved to it.")
	t.deadLetters = client.Int64Counter(m, &errs, "zkgen.queue.dead_lettered", "{item}", "Items of at-least-once queues moved to the dead letters after dead_letter_after deliveries without an ack.")
	return t, client.JoinErrors(errs...)
}

// resAttrs are the attributes of a resource's metrics.
func resAttrs(kind, name, path string) []attribute.KeyValue {
	return []attribute.KeyValue{attrName.String(orPath(name, path)), attrKind.String(kind)}
}

// span is one recipe operation in progress; the zero span (no telemetry)
// records nothing.
type span struct {
	t     *telemetry
	op    op
	kind  string
	name  string // the resource name, or its path when it has none
	path  string
	start time.Time
	sp    trace.Span
	extra attribute.KeyValue // zkgen.lock.mode or zkgen.barrier.phase, if Valid
}

// begin starts the operation o on the resource (kind, name, path). Use it
// as `defer telOf(s).begin(ctx, ...).end(&err)` on a named error result, or
// end it with acquired.
func (t *telemetry) begin(ctx context.Context, o op, kind, name, path string) span {
	if t == nil {
		return span{}
	}
	var extra attribute.KeyValue
	switch o {
	case opBarrierEnter:
		extra = attrPhase.String("enter")
	case opBarrierLeave:
		extra = attrPhase.String("leave")
	}
	return t.beginWith(ctx, o, kind, name, path, extra)
}

// beginWith is begin with one more attribute (ignored when not valid).
func (t *telemetry) beginWith(ctx context.Context, o op, kind, name, path string, extra attribute.KeyValue) span {
	if t == nil {
		return span{}
	}
	sp := span{t: t, op: o, kind: kind, name: orPath(name, path), path: path, start: time.Now(), extra: extra}
	if t.tracer != nil {
		attrs := []attribute.KeyValue{attrName.String(sp.name), attrKind.String(kind), attrPath.String(path)}
		if extra.Valid() {
			attrs = append(attrs, extra)
		}
		_, sp.sp = t.tracer.Start(ctx, opInfo[o].span, trace.WithAttributes(attrs...))
	}
	return sp
}

// end ends the operation with the error *err, recording its duration
// (for the wait histograms, of successful operations only) and its span.
func (sp span) end(err *error) {
	if sp.t == nil {
		return
	}
	e := *err
	sp.finish(e, e == nil || !waitHist(opInfo[sp.op].hist))
}

// acquired ends an acquisition (lock, semaphore lease, leadership) that
// gave the tenure h (nil: not acquired) or err; the tenure then records
// its end (hold time, loss).
func (sp span) acquired(h *hold, err error) {
	if sp.t == nil {
		return
	}
	sp.finish(err, h != nil)
	if h != nil {
		sp.t.tenure(h, sp.kind, sp.name, sp.path, sp.extra)
	}
}

// finish records the operation's duration if timed (and it has a
// histogram) and ends its span with err.
func (sp span) finish(err error, timed bool) {
	if h := opInfo[sp.op].hist; h != histNone && timed {
		attrs := []attribute.KeyValue{attrName.String(sp.name), attrKind.String(sp.kind), attrStatus.String(outcomeOf(err))}
		if sp.extra.Valid() {
			attrs = append(attrs, sp.extra)
		}
		sp.t.hists[h].Record(context.Background(), time.Since(sp.start).Seconds(), metric.WithAttributes(attrs...))
	}
	if sp.sp != nil {
		if err != nil {
			sp.sp.RecordError(err)
			sp.sp.SetStatus(codes.Error, err.Error())
		}
		sp.sp.End()
	}
}

// waitHist reports whether h records acquisitions only.
func waitHist(h hist) bool { return h == histLockWait || h == histSemWait || h == histLeaseWait }

// outcomeOf is the zkgen.outcome attribute of an operation's error.
func outcomeOf(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	default:
		return "error"
	}
}

// context returns ctx carrying the span, so that the operations it runs
// record theirs as its children; ctx itself when no span is recorded.
func (sp span) context(ctx context.Context) context.Context {
	if sp.sp == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, sp.sp)
}

// orPath is a resource's name, or its path when it has none.
func orPath(name, path string) string {
	if name == "" {
		return path
	}
	return name
}

type telKey struct{}

// telHolder builds a session's recipe telemetry once.
type telHolder struct {
	once sync.Once
	t    *telemetry
}

// telOf returns the session's recipe telemetry, nil when it has no
// provider (or s is nil), building it on first use.
func telOf(s *Session) *telemetry {
	if s == nil {
		return nil
	}
	h := client.Shared(s, telKey{}, func() *telHolder { return &telHolder{} })
	h.once.Do(func() {
		var err error
		if h.t, err = newTelemetry(opsOf(s).Telemetry()); err != nil {
			opsOf(s).Log().Warn("some telemetry instruments could not be created; they record nothing", "err", err)
		}
	})
	return h.t
}

// now returns the time when telemetry is on, the zero time otherwise.
func (t *telemetry) now() time.Time {
	if t == nil {
		return time.Time{}
	}
	return time.Now()
}
