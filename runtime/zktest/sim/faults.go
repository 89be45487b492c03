package sim

import (
	"math/rand/v2"
	"strconv"
)

// Faults on command, each a call a test makes, and at random from a seed
// (WithRandomFaults). Opcodes are ZooKeeper's (zktest.OpCreate, ...).

// faultKind is what happens to a request hit by a fault.
type faultKind int

const (
	faultNone        faultKind = iota
	faultCutBefore             // not executed; the connection is cut
	faultCutAfter              // executed; the connection is cut before the reply
	faultHoldReplies           // executed; nothing reaches the client any more on that connection
)

func (k faultKind) String() string {
	return [...]string{"none", "cut before the request", "cut after the request", "hold replies after the request"}[k]
}

type trigger struct {
	op    int32
	kind  faultKind
	fired chan struct{}
}

type faults struct {
	triggers []*trigger
	isolated map[int64]bool
	rng      *rand.Rand // WithRandomFaults
	rate     float64
	log      []string // what the random schedule did, for the test's report
}

// CutBeforeRequest arms a one-shot fault: the next request of opcode op on
// any connection is not executed, and its connection is cut (the client
// knows the request did not happen only if it knows it was never sent).
// The channel is closed when it fired.
func (s *Server) CutBeforeRequest(op int32) <-chan struct{} { return s.arm(op, faultCutBefore) }

// CutAfterRequest arms a one-shot fault: the next request of opcode op is
// executed and its connection is cut before the reply: it happened, and
// the client does not know.
func (s *Server) CutAfterRequest(op int32) <-chan struct{} { return s.arm(op, faultCutAfter) }

// HoldRepliesAfterRequest arms a one-shot fault: the next request of
// opcode op is executed, and from then on nothing the server sends reaches
// the client on that connection (the client's requests, pings included,
// still reach the server): it hears nothing until it gives up itself.
func (s *Server) HoldRepliesAfterRequest(op int32) <-chan struct{} {
	return s.arm(op, faultHoldReplies)
}

func (s *Server) arm(op int32, kind faultKind) <-chan struct{} {
	t := &trigger{op: op, kind: kind, fired: make(chan struct{})}
	s.mu.Lock()
	s.faults.triggers = append(s.faults.triggers, t)
	s.mu.Unlock()
	return t.fired
}

// Isolate cuts the session id off while on: its connections stay open but
// nothing from or to them gets through (a network partition), so the
// server expires the session on its own clock, and the client gives up on
// its own. Off lets traffic through again.
func (s *Server) Isolate(id int64, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.isolated == nil {
		s.faults.isolated = map[int64]bool{}
	}
	if on {
		s.faults.isolated[id] = true
	} else {
		delete(s.faults.isolated, id)
	}
}

// CutConnection closes the session's connection now; the session lives on
// (the client reconnects to it).
func (s *Server) CutConnection(id int64) {
	s.mu.Lock()
	ss := s.sessions[id]
	var c *conn
	if ss != nil {
		c = ss.conn
	}
	s.mu.Unlock()
	if c != nil {
		c.close()
	}
}

// WithRandomFaults makes each request (pings, auth and setWatches aside)
// hit a fault with probability rate — cut before it, cut after it, or
// replies held after it, chosen at random — from a generator seeded with
// seed: the test prints the seed, and FaultLog says what happened.
func WithRandomFaults(seed uint64, rate float64) Option {
	return func(c *config) { c.faultSeed, c.faultRate = seed, rate }
}

// SetFaultRate changes the probability of a random fault (see
// WithRandomFaults); 0 stops them, for a workload's quiet end.
func (s *Server) SetFaultRate(rate float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.rate = rate
}

// FaultLog returns what the random faults (WithRandomFaults) did, in order.
func (s *Server) FaultLog() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.faults.log...)
}

// faultFor returns the fault that hits a request of opcode op (under the
// server's lock).
func (s *Server) faultFor(op int32) faultKind {
	f := &s.faults
	for i, t := range f.triggers {
		if t.op == op {
			f.triggers = append(f.triggers[:i:i], f.triggers[i+1:]...)
			close(t.fired)
			return t.kind
		}
	}
	if f.rng == nil || op == opPing || op == opAuth || op == opSetWatches || op == opSetWatches2 {
		return faultNone
	}
	if f.rng.Float64() >= f.rate {
		return faultNone
	}
	k := faultKind(1 + f.rng.IntN(3))
	f.log = append(f.log, k.String()+" of op "+strconv.Itoa(int(op)))
	return k
}
