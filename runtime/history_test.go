package runtime_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// Histories of config and counter operations, recorded while some clients'
// connections are cut right after their requests reach the server, and
// checked for linearizability with porcupine.
//
// An operation whose outcome the client cannot know (an error other than
// ErrVersionConflict: ErrOutcomeUnknown, retries exhausted) is recorded
// with an output that says so, and the model accepts it with or without its
// effect. If it may still be executed after it returned, it is recorded as
// pending: its return is at the end of time, so the checker may place it
// anywhere after its call. A recipe that settles such an outcome before
// returning (no request of it left in flight) lets the test record its real
// return instead, which keeps the check fast (see registerModel).

// history records operations from several goroutines.
type history struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

func newHistory() *history { return &history{start: time.Now()} }

func (h *history) now() int64 { return int64(time.Since(h.start)) }

// add records one operation; pending ones end at infinity.
func (h *history) add(client int, in any, call int64, out any, pending bool) {
	ret := h.now()
	if pending {
		ret = math.MaxInt64
	}
	h.mu.Lock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	h.mu.Unlock()
}

// check runs porcupine and, on a violation, writes its visualization.
func (h *history) check(t *testing.T, m porcupine.Model) {
	t.Helper()
	began := time.Now()
	res, info := porcupine.CheckOperationsVerbose(m, h.ops, 30*time.Second)
	t.Logf("porcupine took %v", time.Since(began).Round(time.Millisecond))
	pending := 0
	for _, op := range h.ops {
		if op.Return == math.MaxInt64 {
			pending++
		}
	}
	t.Logf("porcupine: %v on %d operations (%d with unknown outcome)", res, len(h.ops), pending)
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		out := filepath.Join(os.TempDir(), fmt.Sprintf("%s-%d.html", filepath.Base(t.Name()), os.Getpid()))
		if err := porcupine.VisualizePath(m, info, out); err == nil {
			t.Logf("visualization: %s", out)
		}
		t.Fatal("history is not linearizable")
	default:
		t.Fatal("porcupine could not decide in time")
	}
}

// cutter keeps a cut armed on each proxy — after a request of one of ops,
// chosen at random — until it has cut the proxy's connection budget times
// or stop is closed, and counts the cuts. ops must be requests the clients
// keep sending (a trigger that never fires stalls that proxy's faults).
func cutter(ps []*zktest.Proxy, ops []int32, budget int, seed uint64, stop <-chan struct{}) (wait func() int) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	cuts := 0
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			for range budget {
				select {
				case <-p.CutAfterRequest(ops[r.IntN(len(ops))]):
					mu.Lock()
					cuts++
					mu.Unlock()
				case <-stop:
					return
				}
			}
		}()
	}
	return func() int { wg.Wait(); return cuts }
}

// The config's sequential specification: a versioned register.
type regState struct {
	exists bool
	val    int
	ver    runtime.Version
}

type regIn struct {
	op  string // get, set, cas
	val int
	ver runtime.Version // cas: expected version
}

type regOut struct {
	unknown  bool
	conflict bool // cas: ErrVersionConflict
	exists   bool // get
	val      int  // get
	ver      runtime.Version
}

// registerModel is the config's specification. A write whose outcome is
// unknown took effect or did not; which one is the checker's choice. Such a
// write is recorded with its real return when its error wraps
// ErrOutcomeUnknown: the write settled first (Config.write syncs the
// session and reads the node), and a session's requests are executed in the
// order sent, so the lost request was executed, or dropped with its
// connection, before the sync — nothing of it is in flight after the
// return. Recording every such write as pending for ever is sound but makes
// the check exponential in their number: 37 of them exhausted porcupine's
// 30 s on a loaded CI machine (TestRegisterHistoryCheckDecides).
var registerModel = (&porcupine.NondeterministicModel{
	Init: func() []any { return []any{regState{exists: true, val: 0, ver: 0}} },
	Step: func(state, input, output any) []any {
		st, in, out := state.(regState), input.(regIn), output.(regOut)
		next := st.ver + 1
		if !st.exists {
			next = 0
		}
		written := regState{true, in.val, next}
		switch in.op {
		case "get":
			if st.exists == out.exists && (!st.exists || out.val == st.val && out.ver == st.ver) {
				return []any{st}
			}
			return nil
		case "set":
			if out.unknown {
				return []any{st, written}
			}
			if out.ver == next {
				return []any{written}
			}
			return nil
		}
		match := st.exists && st.ver == in.ver || !st.exists && in.ver == runtime.NoVersion
		switch {
		case out.unknown && match:
			return []any{st, written}
		case out.unknown, out.conflict && !match:
			return []any{st}
		case !out.conflict && match && out.ver == next:
			return []any{written}
		}
		return nil
	},
	DescribeOperation: describeRegOp,
	DescribeState: func(state any) string {
		st := state.(regState)
		if !st.exists {
			return "none"
		}
		return fmt.Sprintf("%d@v%d", st.val, st.ver)
	},
}).ToModel()

func describeRegOp(input, output any) string {
	in, out := input.(regIn), output.(regOut)
	res := fmt.Sprintf("v%d", out.ver)
	switch {
	case out.unknown:
		res = "unknown"
	case out.conflict:
		res = "conflict"
	case in.op == "get" && out.exists:
		res = fmt.Sprintf("%d@v%d", out.val, out.ver)
	case in.op == "get":
		res = "none"
	}
	switch in.op {
	case "get":
		return "get() → " + res
	case "set":
		return fmt.Sprintf("set(%d) → %s", in.val, res)
	}
	return fmt.Sprintf("cas(%d, v%d) → %s", in.val, in.ver, res)
}

// Six clients, three of them behind proxies that keep cutting their
// connection right after a setData or getData reaches the server,
// run Get / Set / CompareAndSet on one config node; the history must be
// linearizable as a versioned register.
func TestConfigHistoryLinearizable(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 2*time.Minute)
	p := runtime.At(testRoot(t)).Lit("flags")
	codec := runtime.JSONCodec[cfgValue]()
	if _, err := runtime.NewConfig(connect(t, srv.Servers()), p, codec).CompareAndSet(ctx, cfgValue{0}, runtime.NoVersion); err != nil {
		t.Fatal(err)
	}
	const clients, faulty, opsEach, cutsEach = 6, 3, 60, 20
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	h := newHistory()
	var proxies []*zktest.Proxy
	cfgs := make([]*runtime.Config[cfgValue], clients)
	for i := range cfgs {
		servers := srv.Servers()
		if i < faulty {
			px := zktest.NewProxy(t, srv.Addr())
			proxies = append(proxies, px)
			servers = viaProxy(px)
		}
		cfgs[i] = runtime.NewConfig(connect(t, servers), p, codec)
	}
	stop := make(chan struct{})
	cuts := cutter(proxies, []int32{zktest.OpSetData, zktest.OpSetData, zktest.OpGetData}, cutsEach, seed, stop)

	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(100+i)))
			lastVer := runtime.Version(0)
			for k := range opsEach {
				val := (i+1)*1000 + k // unique per write
				call := h.now()
				switch x := r.IntN(10); {
				case x < 4:
					v, ver, err := cfg.Get(ctx)
					switch {
					case err == nil:
						lastVer = ver
						h.add(i, regIn{op: "get"}, call, regOut{exists: true, val: v.N, ver: ver}, false)
					case errors.Is(err, runtime.ErrNoValue):
						h.add(i, regIn{op: "get"}, call, regOut{}, false)
					default:
						t.Logf("client %d: Get: %v (not recorded)", i, err)
					}
				case x < 7:
					ver, err := cfg.Set(ctx, cfgValue{val})
					h.add(i, regIn{op: "set", val: val}, call, regOut{unknown: err != nil, ver: ver}, inFlight(err))
					if err != nil && !runtime.IsRecoverable(err) {
						t.Errorf("client %d: Set: %v", i, err)
					}
				default:
					// CAS both fresh and possibly stale versions.
					want := lastVer
					if r.IntN(3) == 0 {
						want = runtime.Version(r.IntN(int(lastVer) + 2))
					}
					ver, err := cfg.CompareAndSet(ctx, cfgValue{val}, want)
					conflict := errors.Is(err, runtime.ErrVersionConflict)
					unknown := err != nil && !conflict
					h.add(i, regIn{op: "cas", val: val, ver: want}, call, regOut{unknown: unknown, conflict: conflict, ver: ver}, unknown && inFlight(err))
					if err == nil {
						lastVer = ver
					}
					if unknown && !runtime.IsRecoverable(err) {
						t.Errorf("client %d: CompareAndSet: %v", i, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	t.Logf("%d connections cut", cuts())
	h.check(t, registerModel)
}

// inFlight reports whether a config write that failed with err may still
// be executed after its return: only an error that does not wrap
// ErrOutcomeUnknown (the end of ctx or of the session while the request was
// in flight) leaves it so; see registerModel.
func inFlight(err error) bool {
	return err != nil && !errors.Is(err, runtime.ErrOutcomeUnknown)
}

// The counter's sequential specification.
type ctrIn struct {
	add   bool
	delta int64
}

type ctrOut struct {
	unknown bool
	val     int64
}

// counterModel is the counter's specification. An Add whose outcome is
// unknown took effect or did not, between its call and its return: every
// fault of TestCounterHistoryLinearizable cuts a connection after the
// server has executed the request (CutAfterRequest), so nothing of an Add
// is still in flight once it has returned. (Recording such Adds as pending
// for ever, as the config history does, is sound for any fault but makes
// the check exponential in their number: with 40 of them porcupine once ran
// out of its 30 s, seed 1795398261411349485 under .ci/stress.)
var counterModel = (&porcupine.NondeterministicModel{
	Init: func() []any { return []any{int64(0)} },
	Step: func(state, input, output any) []any {
		st, in, out := state.(int64), input.(ctrIn), output.(ctrOut)
		switch {
		case !in.add && out.val == st:
			return []any{st}
		case !in.add:
			return nil
		case out.unknown:
			return []any{st, st + in.delta}
		case out.val == st+in.delta:
			return []any{st + in.delta}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(ctrIn), output.(ctrOut)
		res := fmt.Sprint(out.val)
		if out.unknown {
			res = "unknown"
		}
		if in.add {
			return fmt.Sprintf("add(%d) → %s", in.delta, res)
		}
		return "get() → " + res
	},
}).ToModel()

// Six clients, three behind cutting proxies, Add to and Get one counter
// (the first Add creates it); the history must be linearizable as a
// counter: every successful Add counted once, every unknown one at most
// once, and every Get a value the counter had.
func TestCounterHistoryLinearizable(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 2*time.Minute)
	p := runtime.At(testRoot(t)).Lit("requests")
	const clients, faulty, opsEach, cutsEach = 6, 3, 60, 20
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	h := newHistory()
	var proxies []*zktest.Proxy
	ctrs := make([]*runtime.Counter, clients)
	for i := range ctrs {
		servers := srv.Servers()
		if i < faulty {
			px := zktest.NewProxy(t, srv.Addr())
			proxies = append(proxies, px)
			servers = viaProxy(px)
		}
		ctrs[i] = runtime.NewCounter(connect(t, servers), p)
	}
	// One faulty client's first create (the counter's) is cut too.
	proxies[0].CutAfterRequest(zktest.OpCreate)
	stop := make(chan struct{})
	cuts := cutter(proxies, []int32{zktest.OpSetData, zktest.OpSetData, zktest.OpGetData}, cutsEach, seed, stop)
	var wg sync.WaitGroup
	for i, c := range ctrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(100+i)))
			for range opsEach {
				call := h.now()
				if r.IntN(3) == 0 {
					v, err := c.Get(ctx)
					if err != nil {
						t.Logf("client %d: Get: %v (not recorded)", i, err)
						continue
					}
					h.add(i, ctrIn{}, call, ctrOut{val: v}, false)
					continue
				}
				d := int64(r.IntN(9) + 1)
				v, err := c.Add(ctx, d)
				// Recorded with its real return: see counterModel.
				h.add(i, ctrIn{add: true, delta: d}, call, ctrOut{unknown: err != nil, val: v}, false)
				if err != nil && !runtime.IsRecoverable(err) {
					t.Errorf("client %d: Add: %v", i, err)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	t.Logf("%d connections cut", cuts())
	// A last read, after everything, pins the final value.
	v, err := runtime.NewCounter(connect(t, srv.Servers()), p).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.add(clients, ctrIn{}, h.now(), ctrOut{val: v}, false)
	h.check(t, counterModel)
}
