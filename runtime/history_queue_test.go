package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// Histories of queue puts and takes, recorded while every client's
// connection is cut right after some of its requests reach the server, and
// checked with porcupine against two sequential specifications:
//
//   - a FIFO queue, for one consumer and several producers: a take returns
//     the oldest item;
//   - a bag, for several consumers: a take returns some item that was put
//     and not taken yet. Concurrent consumers skip items raced away by
//     others (and may pick from a window near the head), so strict FIFO
//     across consumers is not promised; what is promised is that no item
//     is taken twice, none is invented, and none is lost.
//
// Either way the history ends, after every client is done, with a drain
// (takes while Len says there are items) and an "empty" operation: the
// model must be empty there, so every item put was taken exactly once.
//
// A put or take whose outcome the client cannot know (ErrPutUncertain,
// ErrTakeUncertain) is pending: a pending put may or may not take effect, a
// pending take removes the head (FIFO) or any item (bag), or nothing.
// Other errors mean nothing happened and are not recorded. None of the
// uncertain errors may occur here (they mean the session ended, and cuts
// do not end it); the test fails if one does, after checking the history.

type qOp int

const (
	qPut qOp = iota
	qTake
	qEmpty // the queue is empty (Len == 0, after everything)
)

type qIn struct {
	op qOp
	v  int // put
}

type qOut struct {
	unknown bool // the outcome is not known (pending)
	v       int  // take: the item taken
}

// The FIFO state: the queue's items in order, two bytes each (a string, so
// that states compare with ==).
func fifoPush(st string, v int) string { return st + string([]byte{byte(v >> 8), byte(v)}) }
func fifoHead(st string) int           { return int(st[0])<<8 | int(st[1]) }
func fifoItems(st string) []int {
	var out []int
	for ; len(st) > 0; st = st[2:] {
		out = append(out, fifoHead(st))
	}
	return out
}

var fifoQueueModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{""} },
	Step: func(state, input, output any) []any {
		st, in, out := state.(string), input.(qIn), output.(qOut)
		switch in.op {
		case qPut:
			return []any{fifoPush(st, in.v)}
		case qEmpty:
			if st == "" {
				return []any{st}
			}
			return nil
		}
		switch {
		case out.unknown && st == "":
			return []any{st}
		case out.unknown:
			return []any{st, st[2:]} // took the head, or nothing
		case st != "" && fifoHead(st) == out.v:
			return []any{st[2:]}
		}
		return nil
	},
	DescribeOperation: describeQueueOp,
	DescribeState:     func(state any) string { return fmt.Sprint(fifoItems(state.(string))) },
}

// The bag state: a bitset of the items in the queue, without trailing zero
// bytes (so that equal sets are equal strings).
func bagHas(st string, v int) bool { return v/8 < len(st) && st[v/8]&(1<<(v%8)) != 0 }
func bagAdd(st string, v int) string {
	b := []byte(st)
	for len(b) <= v/8 {
		b = append(b, 0)
	}
	b[v/8] |= 1 << (v % 8)
	return string(b)
}
func bagRemove(st string, v int) string {
	b := []byte(st)
	b[v/8] &^= 1 << (v % 8)
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return string(b)
}
func bagItems(st string) []int {
	var out []int
	for v := 0; v < 8*len(st); v++ {
		if bagHas(st, v) {
			out = append(out, v)
		}
	}
	return out
}

var bagQueueModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{""} },
	Step: func(state, input, output any) []any {
		st, in, out := state.(string), input.(qIn), output.(qOut)
		switch in.op {
		case qPut:
			if bagHas(st, in.v) {
				return nil // items are unique: a second put of one is a test bug
			}
			return []any{bagAdd(st, in.v)}
		case qEmpty:
			if st == "" {
				return []any{st}
			}
			return nil
		}
		if out.unknown {
			next := []any{st} // took nothing, or any one item
			for _, v := range bagItems(st) {
				next = append(next, bagRemove(st, v))
			}
			return next
		}
		if bagHas(st, out.v) {
			return []any{bagRemove(st, out.v)}
		}
		return nil
	},
	DescribeOperation: describeQueueOp,
	DescribeState:     func(state any) string { return fmt.Sprint(bagItems(state.(string))) },
}

func describeQueueOp(input, output any) string {
	in, out := input.(qIn), output.(qOut)
	switch in.op {
	case qPut:
		if out.unknown {
			return fmt.Sprintf("put(%d) → unknown", in.v)
		}
		return fmt.Sprintf("put(%d)", in.v)
	case qEmpty:
		return "empty()"
	}
	if out.unknown {
		return "take() → unknown"
	}
	return fmt.Sprintf("take() → %d", out.v)
}

// Each model rejects the histories it must reject, and accepts what the
// other one rejects where they differ.
func TestQueueHistoryModels(t *testing.T) {
	type op struct {
		client     int
		in         qIn
		out        qOut
		call, ret  int64
		pendingRet bool
	}
	build := func(ops ...op) []porcupine.Operation {
		var h []porcupine.Operation
		for _, o := range ops {
			ret := o.ret
			if o.pendingRet {
				ret = math.MaxInt64
			}
			h = append(h, porcupine.Operation{ClientId: o.client, Input: o.in, Output: o.out, Call: o.call, Return: ret})
		}
		return h
	}
	put := func(c, v int, call, ret int64) op { return op{c, qIn{op: qPut, v: v}, qOut{}, call, ret, false} }
	take := func(c, v int, call, ret int64) op { return op{c, qIn{op: qTake}, qOut{v: v}, call, ret, false} }
	empty := func(c int, call, ret int64) op { return op{c, qIn{op: qEmpty}, qOut{}, call, ret, false} }
	fifo, bag := fifoQueueModel.ToModel(), bagQueueModel.ToModel()
	cases := []struct {
		name      string
		h         []porcupine.Operation
		fifo, bag bool
	}{
		{"in order", build(put(0, 1, 0, 1), put(1, 2, 2, 3), take(2, 1, 4, 5), take(2, 2, 6, 7), empty(3, 8, 9)), true, true},
		// Puts in real-time order, takes in the other order.
		{"overtaken", build(put(0, 1, 0, 1), put(1, 2, 2, 3), take(2, 2, 4, 5), take(2, 1, 6, 7), empty(3, 8, 9)), false, true},
		// Concurrent puts may be taken in either order.
		{"concurrent puts", build(put(0, 1, 0, 3), put(1, 2, 0, 3), take(2, 2, 4, 5), take(2, 1, 6, 7), empty(3, 8, 9)), true, true},
		{"taken twice", build(put(0, 1, 0, 1), take(1, 1, 2, 3), take(2, 1, 4, 5)), false, false},
		{"never put", build(put(0, 1, 0, 1), take(1, 2, 2, 3)), false, false},
		{"taken before put", build(take(1, 1, 0, 1), put(0, 1, 2, 3)), false, false},
		{"lost", build(put(0, 1, 0, 1), put(0, 2, 2, 3), take(1, 1, 4, 5), empty(2, 6, 7)), false, false},
		// A pending put may never have happened; a pending take may have
		// taken the item.
		{"pending put", build(op{0, qIn{op: qPut, v: 1}, qOut{unknown: true}, 0, 0, true}, empty(1, 2, 3)), true, true},
		{"pending take", build(put(0, 1, 0, 1), op{1, qIn{op: qTake}, qOut{unknown: true}, 2, 0, true}, empty(2, 4, 5)), true, true},
	}
	for _, c := range cases {
		if got := porcupine.CheckOperations(fifo, c.h); got != c.fifo {
			t.Errorf("%s: FIFO model says linearizable=%v, want %v", c.name, got, c.fifo)
		}
		if got := porcupine.CheckOperations(bag, c.h); got != c.bag {
			t.Errorf("%s: bag model says linearizable=%v, want %v", c.name, got, c.bag)
		}
	}
}

// queueHistory runs producers (each putting perProducer items) and
// consumers, every one on its own session through its own cutting proxy,
// records the history, drains the queue and records the final empty().
//
// About backlog items at most are in the queue at a time (a producer waits
// for fewer before each put, watching the buckets): with a long
// backlog, the order of many overlapping puts stays open until their items
// are taken, and the FIFO check grows exponential.
func queueHistory(t *testing.T, producers, consumers, perProducer, backlog, cutsEach int) *history {
	return queueHistoryOf(t, 0, producers, consumers, perProducer, backlog, cutsEach)
}

// histQueue is the queue a history runs on: a FIFO queue, or a priority
// queue that puts item v at priority v%levels.
type histQueue struct {
	put   func(ctx context.Context, v int) error
	takeN func(ctx context.Context, n int) ([]int, error)
	len   func(ctx context.Context) (int, error)
}

func newHistQueue(s *runtime.Session, dir string, levels int, opt ...runtime.QueueOption) histQueue {
	codec := runtime.JSONCodec[int]()
	if levels == 0 {
		q := runtime.NewQueue(s, runtime.At(dir), codec, opt...)
		return histQueue{put: q.Put, takeN: q.TakeN, len: q.Len}
	}
	q := runtime.NewPriorityQueue(s, runtime.At(dir), codec, levels, opt...)
	return histQueue{
		put:   func(ctx context.Context, v int) error { return q.Put(ctx, runtime.Priority(v%levels), v) },
		takeN: q.TakeN, len: q.Len,
	}
}

// queueHistoryOf is queueHistory on a FIFO queue (levels 0) or a priority
// queue of levels priorities; the consumers' handles also get opts.
func queueHistoryOf(t *testing.T, levels, producers, consumers, perProducer, backlog, cutsEach int, opts ...runtime.QueueOption) *history {
	srv := server(t)
	ctx := testCtx(t, 2*time.Minute)
	dir := testRoot(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	qopt := runtime.WithBucketSize(8) // buckets sealed and dropped under cuts too
	h := newHistory()
	var sessions []*runtime.Session
	newClient := func(opts ...runtime.QueueOption) (histQueue, *zktest.Proxy) {
		px := zktest.NewProxy(t, srv.Addr())
		s := connect(t, viaProxy(px))
		sessions = append(sessions, s)
		return newHistQueue(s, dir, levels, append([]runtime.QueueOption{qopt}, opts...)...), px
	}
	// Producers send a multi per put; consumers list (getChildren2), read
	// (getData) and delete (multi).
	var cutters []*opCutter
	prods := make([]histQueue, producers)
	for i := range prods {
		var px *zktest.Proxy
		prods[i], px = newClient()
		cutters = append(cutters, newOpCutter(px, seed, len(cutters), cutsEach, zktest.OpMulti))
	}
	conss := make([]histQueue, consumers)
	for i := range conss {
		var px *zktest.Proxy
		conss[i], px = newClient(opts...)
		cutters = append(cutters, newOpCutter(px, seed, len(cutters), cutsEach,
			zktest.OpMulti, zktest.OpMulti, zktest.OpGetData, zktest.OpGetChildren2))
	}

	var uncertain atomic.Int32
	var mu sync.Mutex
	putOK := map[int]bool{}
	taken := map[int]int{}
	record := func(client int, in qIn, call int64, out qOut) { h.add(client, in, call, out, out.unknown) }
	// The harness's own session (no proxy): it watches the backlog and
	// drains the queue at the end.
	ds := connect(t, srv.Servers())
	var pwg, cwg sync.WaitGroup
	for i, q := range prods {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			for k := range perProducer {
				v := i*perProducer + k
				if err := waitQueueBelow(ctx, ds, dir, backlog); err != nil {
					t.Errorf("producer %d: %v", i, err)
					return
				}
				for {
					cutters[i].before()
					call := h.now()
					err := q.put(ctx, v)
					if err == nil {
						mu.Lock()
						record(i, qIn{op: qPut, v: v}, call, qOut{})
						putOK[v] = true
						mu.Unlock()
						break
					}
					if errors.Is(err, runtime.ErrPutUncertain) {
						uncertain.Add(1)
						t.Errorf("producer %d: Put(%d): %v", i, v, err)
						mu.Lock()
						record(i, qIn{op: qPut, v: v}, call, qOut{unknown: true})
						mu.Unlock()
						return
					}
					if !runtime.IsRecoverable(err) && !errors.Is(err, runtime.ErrRetriesExhausted) {
						t.Errorf("producer %d: Put(%d): %v", i, v, err)
						return
					}
					t.Logf("producer %d: Put(%d): %v (nothing put; again)", i, v, err)
				}
			}
		}()
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i, q := range conss {
		client := producers + i
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			for {
				cutters[client].before()
				call := h.now()
				vs, err := q.takeN(cctx, 1)
				mu.Lock()
				for _, v := range vs {
					record(client, qIn{op: qTake}, call, qOut{v: v})
					taken[v]++
				}
				if err != nil && errors.Is(err, runtime.ErrTakeUncertain) {
					uncertain.Add(1)
					t.Errorf("consumer %d: Take: %v", i, err)
					record(client, qIn{op: qTake}, call, qOut{unknown: true})
				}
				mu.Unlock()
				switch {
				case err == nil:
				case cctx.Err() != nil:
					return
				case errors.Is(err, runtime.ErrTakeUncertain), !runtime.IsRecoverable(err) && !errors.Is(err, runtime.ErrRetriesExhausted):
					t.Errorf("consumer %d: Take: %v", i, err)
					return
				default:
					t.Logf("consumer %d: Take: %v (nothing taken; again)", i, err)
				}
			}
		}()
	}
	pwg.Wait()
	// Once the producers are done, the consumers are done when the queue
	// is empty (not when every item put was seen taken: a lost item must
	// fail the check, not stall the test).
	if err := waitQueueBelow(ctx, ds, dir, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	cwg.Wait()
	t.Logf("%d connections cut", countCuts(cutters))

	// Drain what is left (nothing, unless a put's outcome was unknown)
	// and pin the end: the queue is empty.
	last := producers + consumers
	d := newHistQueue(ds, dir, levels, qopt)
	for {
		n, err := d.len(ctx)
		if err != nil {
			t.Fatal(err)
		}
		call := h.now()
		if n == 0 {
			h.add(last, qIn{op: qEmpty}, call, qOut{}, false)
			break
		}
		vs, err := d.takeN(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		v := vs[0]
		mu.Lock()
		record(last, qIn{op: qTake}, call, qOut{v: v})
		taken[v]++
		mu.Unlock()
	}
	for i, s := range sessions {
		if err := s.Err(); err != nil {
			t.Errorf("session %d ended: %v", i, err)
		}
	}
	// The same, directly: every item put was taken exactly once.
	for v := range putOK {
		if taken[v] != 1 {
			t.Errorf("item %d taken %d times", v, taken[v])
		}
	}
	for v, n := range taken {
		if !putOK[v] && n > 1 {
			t.Errorf("item %d (put outcome unknown) taken %d times", v, n)
		}
	}
	if n := uncertain.Load(); n > 0 {
		t.Errorf("%d uncertain outcomes although no session ended", n)
	}
	return h
}

// opCutter cuts one client's connection (through its proxy) during some of
// its operations: before an operation it arms, with probability 1/3 and
// until budget cuts are done, a cut right after the next request of one of
// ops (chosen from the seed), unless one is still armed. Unlike cutter,
// which re-arms at once, it spreads the cuts over the run instead of
// landing several back to back on one request that is retried. Only the
// client's goroutine uses it.
type opCutter struct {
	px     *zktest.Proxy
	r      *rand.Rand
	ops    []int32
	budget int
	armed  <-chan struct{}
	cuts   int
}

func newOpCutter(px *zktest.Proxy, seed uint64, stream, budget int, ops ...int32) *opCutter {
	return &opCutter{px: px, r: rand.New(rand.NewPCG(seed, uint64(stream))), ops: ops, budget: budget}
}

// before is called before each operation.
func (c *opCutter) before() {
	if c.fired() && c.cuts < c.budget && c.r.IntN(3) == 0 {
		c.armed = c.px.CutAfterRequest(c.ops[c.r.IntN(len(c.ops))])
	}
}

// fired counts an armed cut that happened and reports whether none is
// armed any more.
func (c *opCutter) fired() bool {
	if c.armed == nil {
		return true
	}
	select {
	case <-c.armed:
		c.cuts++
		c.armed = nil
		return true
	default:
		return false
	}
}

// countCuts counts the cuts made, once the clients are done.
func countCuts(cs []*opCutter) int {
	n := 0
	for _, c := range cs {
		c.fired()
		n += c.cuts
	}
	return n
}

// waitQueueBelow blocks until the queue at dir (a FIFO queue, or a
// priority queue's levels p-NN) holds fewer than n items, using child
// watches on its buckets (no polling).
func waitQueueBelow(ctx context.Context, s *runtime.Session, dir string, n int) error {
	for {
		kids, _, err := s.Conn().Children(dir)
		if err == zk.ErrNoNode {
			return nil
		}
		if err != nil {
			return fmt.Errorf("children %s: %w", dir, err)
		}
		var buckets []string
		for _, k := range kids {
			if strings.HasPrefix(k, "b-") {
				buckets = append(buckets, k)
			}
			if !strings.HasPrefix(k, "p-") {
				continue
			}
			bs, _, err := s.Conn().Children(dir + "/" + k)
			if err != nil && err != zk.ErrNoNode {
				return fmt.Errorf("children %s/%s: %w", dir, k, err)
			}
			for _, b := range bs {
				if strings.HasPrefix(b, "b-") {
					buckets = append(buckets, k+"/"+b)
				}
			}
		}
		total := 0
		cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())}}
		for _, b := range buckets {
			items, _, ch, err := s.Conn().ChildrenW(dir + "/" + b)
			if err == zk.ErrNoNode {
				continue
			}
			if err != nil {
				return fmt.Errorf("children %s/%s: %w", dir, b, err)
			}
			total += len(items)
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
		}
		if total < n {
			return nil
		}
		if i, _, _ := reflect.Select(cases); i == 0 {
			return fmt.Errorf("waiting for fewer than %d items in %s: %w", n, dir, ctx.Err())
		}
	}
}

// mustBeIllegal checks that porcupine rejects a doctored history.
func mustBeIllegal(t *testing.T, m porcupine.Model, ops []porcupine.Operation, what string) {
	t.Helper()
	res, _ := porcupine.CheckOperationsVerbose(m, ops, 30*time.Second)
	if res != porcupine.Illegal {
		t.Errorf("%s: porcupine says %v, want Illegal", what, res)
		return
	}
	t.Logf("%s: porcupine rejects it", what)
}

// Three producers put 60 items each, one consumer takes them, every client
// through its own proxy that keeps cutting its connection after a put's
// or take's request reached the server: the history is that of a FIFO
// queue. Swapping the items of two takes of one producer's successive items
// makes it non-linearizable.
func TestQueueFIFOHistoryLinearizable(t *testing.T) {
	const producers, perProducer = 3, 60
	h := queueHistory(t, producers, 1, perProducer, 4, 15)
	fifo := fifoQueueModel.ToModel()
	h.check(t, fifo)

	// Doctored: producer 0's items k and k+1 (both certainly put, in that
	// order) come out swapped.
	ops := slices.Clone(h.ops)
	takeOf := map[int]int{}
	for i, op := range ops {
		if in, out := op.Input.(qIn), op.Output.(qOut); in.op == qTake && !out.unknown {
			takeOf[out.v] = i
		}
	}
	for k := 0; k+1 < perProducer; k++ {
		a, okA := takeOf[k]
		b, okB := takeOf[k+1]
		if okA && okB {
			ops[a].Output, ops[b].Output = ops[b].Output, ops[a].Output
			mustBeIllegal(t, fifo, ops, fmt.Sprintf("items %d and %d taken in the wrong order", k, k+1))
			return
		}
	}
	t.Error("no two successive items of producer 0 were taken")
}

// Three producers put 60 items each while three consumers take, every
// client through its own cutting proxy: the history is that of a bag (no
// item taken twice, none invented, none lost). Taking one item a second
// time makes it non-linearizable.
func TestQueueBagHistoryLinearizable(t *testing.T) {
	h := queueHistory(t, 3, 3, 60, 6, 15)
	bag := bagQueueModel.ToModel()
	h.check(t, bag)

	ops := slices.Clone(h.ops)
	for _, op := range ops {
		if in, out := op.Input.(qIn), op.Output.(qOut); in.op == qTake && !out.unknown && op.Return != math.MaxInt64 {
			dup := op
			dup.ClientId = 1 << 20
			dup.Call, dup.Return = op.Return+1, op.Return+2
			mustBeIllegal(t, bag, append(ops, dup), fmt.Sprintf("item %d taken a second time", out.v))
			return
		}
	}
	t.Error("no take recorded")
}

// The FIFO and bag histories with consumers that prefetch (WithPrefetch):
// items taken a chunk at a time and served from the handle's buffer keep
// the FIFO order for one consumer and exactly-once delivery for several,
// under the same cuts (chunk claims, reads and multis cut).
func TestQueuePrefetchHistoryLinearizable(t *testing.T) {
	t.Run("fifo", func(t *testing.T) {
		h := queueHistoryOf(t, 0, 3, 1, 60, 6, 15, runtime.WithPrefetch(4))
		h.check(t, fifoQueueModel.ToModel())
	})
	t.Run("bag", func(t *testing.T) {
		h := queueHistoryOf(t, 0, 3, 3, 60, 16, 15, runtime.WithPrefetch(4))
		h.check(t, bagQueueModel.ToModel())
	})
}

// prioFIFOModel is a priority queue of 3 levels, item v at level v%3, seen
// by one consumer: a take returns the oldest item of some level. Which
// level is not pinned: a consumer learns of an item at a more urgent level
// it found empty by a watch notification, which may arrive after a take
// began (strict priority order is checked without concurrency, in
// TestPriorityQueueOrder and TestPriorityQueueManyItems). Within a level
// the order is FIFO, and every item is taken exactly once.
var prioFIFOModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{""} },
	Step: func(state, input, output any) []any {
		st, in, out := state.(string), input.(qIn), output.(qOut)
		switch in.op {
		case qPut:
			return []any{fifoPush(st, in.v)}
		case qEmpty:
			if st == "" {
				return []any{st}
			}
			return nil
		}
		items := fifoItems(st)
		heads := map[int]int{} // level → index in items of its oldest item
		for i, v := range items {
			if _, ok := heads[v%3]; !ok {
				heads[v%3] = i
			}
		}
		without := func(i int) string { return st[:2*i] + st[2*i+2:] }
		if out.unknown {
			next := []any{st}
			for _, i := range heads {
				next = append(next, without(i))
			}
			return next
		}
		if i, ok := heads[out.v%3]; ok && items[i] == out.v {
			return []any{without(i)}
		}
		return nil
	},
	DescribeOperation: describeQueueOp,
	DescribeState:     func(state any) string { return fmt.Sprint(fifoItems(state.(string))) },
}

// Three producers put 60 items each over 3 priorities (item v at v%3), one
// consumer takes them, every client through its own proxy that keeps
// cutting its connection after a put's or take's request reached the
// server: each priority is served FIFO, every item once. Swapping the
// takes of two successive items of one priority makes it
// non-linearizable.
func TestPriorityQueueHistoryLinearizable(t *testing.T) {
	const producers, perProducer = 3, 60
	h := queueHistoryOf(t, 3, producers, 1, perProducer, 4, 15)
	m := prioFIFOModel.ToModel()
	h.check(t, m)

	ops := slices.Clone(h.ops)
	takeOf := map[int]int{}
	for i, op := range ops {
		if in, out := op.Input.(qIn), op.Output.(qOut); in.op == qTake && !out.unknown {
			takeOf[out.v] = i
		}
	}
	for k := 0; k+3 < perProducer; k++ {
		a, okA := takeOf[k]
		b, okB := takeOf[k+3]
		if okA && okB {
			ops[a].Output, ops[b].Output = ops[b].Output, ops[a].Output
			mustBeIllegal(t, m, ops, fmt.Sprintf("items %d and %d of priority %d taken in the wrong order", k, k+3, k%3))
			return
		}
	}
	t.Error("no two successive items of one priority were taken")
}

// The same with three consumers: the history is that of a bag (no item
// taken twice, none invented, none lost).
func TestPriorityQueueBagHistoryLinearizable(t *testing.T) {
	h := queueHistoryOf(t, 3, 3, 3, 60, 6, 15)
	h.check(t, bagQueueModel.ToModel())
}

// The priority model accepts a less urgent item taken before a more urgent
// one, and rejects the items of one priority out of order, twice or lost.
func TestPriorityHistoryModel(t *testing.T) {
	op := func(in qIn, out qOut, call int64) porcupine.Operation {
		return porcupine.Operation{ClientId: int(call), Input: in, Output: out, Call: 2 * call, Return: 2*call + 1}
	}
	put := func(v int, at int64) porcupine.Operation { return op(qIn{op: qPut, v: v}, qOut{}, at) }
	take := func(v int, at int64) porcupine.Operation { return op(qIn{op: qTake}, qOut{v: v}, at) }
	empty := func(at int64) porcupine.Operation { return op(qIn{op: qEmpty}, qOut{}, at) }
	m := prioFIFOModel.ToModel()
	for _, c := range []struct {
		name string
		h    []porcupine.Operation
		ok   bool
	}{
		{"levels in any order", []porcupine.Operation{put(0, 0), put(1, 1), take(1, 2), take(0, 3), empty(4)}, true},
		{"one level in order", []porcupine.Operation{put(0, 0), put(3, 1), take(0, 2), take(3, 3), empty(4)}, true},
		{"one level overtaken", []porcupine.Operation{put(0, 0), put(3, 1), take(3, 2), take(0, 3), empty(4)}, false},
		{"taken twice", []porcupine.Operation{put(0, 0), take(0, 1), take(0, 2)}, false},
		{"lost", []porcupine.Operation{put(0, 0), put(1, 1), take(1, 2), empty(3)}, false},
	} {
		if got := porcupine.CheckOperations(m, c.h); got != c.ok {
			t.Errorf("%s: linearizable=%v, want %v", c.name, got, c.ok)
		}
	}
}
