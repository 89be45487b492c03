package runtime_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/zkgen/zkgen/runtime"
)

// The config history's check decides a history of the failing CI run's
// shape (360 operations of six clients on one key, 40 to 60 of them writes
// with an unknown outcome, each recorded with its real return): Ok for a
// linearizable one, Illegal once a read of an older version is appended
// after everything. The budget is not a timed assertion: Unknown is a
// failure whatever the time taken, and the check is polynomial here; it
// was exponential with the unknown writes pending for ever: each of these
// histories (52 to 64 unknown) was still Unknown after 10 s, as a CI run's
// config history (37 unknown) after 30 s.
func TestRegisterHistoryCheckDecides(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		ops, older, unknown := registerHistory(seed, 6, 360)
		if unknown < 40 {
			t.Fatalf("seed %d: only %d writes with an unknown outcome", seed, unknown)
		}
		if res := porcupine.CheckOperationsTimeout(registerModel, ops, time.Minute); res != porcupine.Ok {
			t.Fatalf("seed %d: %v on a linearizable history (%d unknown)", seed, res, unknown)
		}
		end := ops[len(ops)-1].Return
		for _, op := range ops {
			end = max(end, op.Return)
		}
		bad := append(ops, porcupine.Operation{ClientId: 6, Input: regIn{op: "get"}, Call: end + 1,
			Output: regOut{exists: true, val: older.val, ver: older.ver}, Return: end + 2})
		if res := porcupine.CheckOperationsTimeout(registerModel, bad, time.Minute); res != porcupine.Illegal {
			t.Fatalf("seed %d: %v on a history that ends reading %d@v%d", seed, res, older.val, older.ver)
		}
	}
}

// registerHistory makes a linearizable history of n operations by clients
// clients on a versioned register, as TestConfigHistoryLinearizable does:
// 40% reads, 30% blind writes, 30% compare-and-sets (a third of them with a
// version that may be stale); one write in four has an unknown outcome,
// which took effect or not. Each operation takes effect at a point inside
// its window, and windows of different clients overlap. It returns the
// history, a state the register left behind (not the last), and the number
// of writes with an unknown outcome.
func registerHistory(seed uint64, clients, n int) (ops []porcupine.Operation, older regState, unknown int) {
	r := rand.New(rand.NewPCG(seed, 0))
	st := regState{exists: true}
	var states []regState
	lastRet := make([]int64, clients)
	var lin int64
	for k := range n {
		c := r.IntN(clients)
		call := lastRet[c] + 1 + r.Int64N(5)
		lin = max(lin+1, call+1)
		ret := lin + 1 + r.Int64N(300) // up to 300 other operations overlap
		lastRet[c] = ret
		in, out := regIn{op: "get"}, regOut{exists: true, val: st.val, ver: st.ver}
		if x := r.IntN(10); x >= 4 {
			in = regIn{op: "set", val: (c+1)*1000 + k, ver: st.ver}
			if x >= 7 {
				in.op = "cas"
				if r.IntN(3) == 0 {
					in.ver = runtime.Version(r.IntN(int(st.ver) + 2))
				}
			}
			match := in.op == "set" || in.ver == st.ver
			out = regOut{conflict: !match}
			if r.IntN(4) == 0 {
				out, match = regOut{unknown: true}, match && r.IntN(2) == 0
				unknown++
			}
			if match {
				states = append(states, st)
				st = regState{true, in.val, st.ver + 1}
				if !out.unknown {
					out.ver = st.ver
				}
			}
		}
		ops = append(ops, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
	}
	return ops, states[len(states)/2], unknown
}
