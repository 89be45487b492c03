package runtime

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// --- Queue machines shared on a session
//
// A queue machine (queue[T], prioQueue[T]) keeps what its consumer learnt —
// the cached listing, the position in it, the watches, the claims of others
// seen — and its producer's open bucket and pending markers, so that the
// next Take or Put on it costs no listing and no separate marker delete.
// A generated Client returns a new handle at each call (c.Jobs().Take), so
// a machine per handle would list the queue again at every Take. Instead
// the handles of one queue on one session share a pool of machines: an
// operation borrows an idle machine for its side (take or put), or makes
// one when every machine is busy on that side, and gives it back when it
// returns. One goroutine taking in a loop thus keeps one machine, and
// goroutines taking at the same time each have their own, as separate
// handles did.

// queueSide is the side of a machine an operation borrows.
type queueSide int

const (
	putSide queueSide = iota
	takeSide
)

// machinePool is the session's pool of machines of one queue.
type machinePool[M any] struct {
	mu    sync.Mutex
	first M        // the machine a handle is: Path, Len, Peek and the like use it
	idle  [2][]M   // per side, the machines not in use on that side
	mk    func() M // makes another machine
}

// borrow returns an idle machine for side, the most recently given back
// one first (it knows the queue best), or a new one.
func (p *machinePool[M]) borrow(side queueSide) M {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle[side]); n > 0 {
		m := p.idle[side][n-1]
		p.idle[side] = p.idle[side][:n-1]
		return m
	}
	m := p.mk()
	// Idle on the other side until something borrows it there.
	other := 1 - side
	p.idle[other] = append(p.idle[other], m)
	return m
}

// give returns m, borrowed for side.
func (p *machinePool[M]) give(side queueSide, m M) {
	p.mu.Lock()
	p.idle[side] = append(p.idle[side], m)
	p.mu.Unlock()
}

// poolKey names a queue's machine pool on a session: every handle with the
// same key behaves the same, so any of its machines may serve it.
type poolKey struct {
	dir   string
	typ   reflect.Type // item type
	codec reflect.Type // codec's dynamic type
	cfg   string       // the queue's configuration, printed
}

// pooled returns the first machine of the session's pool for the queue at
// dir with this configuration (cfg, after the options), making the pool
// and that machine (with mk) on first use: the machine a handle is.
func pooled[M any, T any](s *Session, dir string, codec Codec[T], cfg queueConfig, mk func(*machinePool[M]) M) M {
	key := poolKey{dir: dir, typ: reflect.TypeFor[T](), codec: reflect.TypeOf(codec), cfg: fmt.Sprintf("%+v", cfg)}
	return client.Shared(s, key, func() *machinePool[M] {
		p := &machinePool[M]{}
		p.mk = func() M { return mk(p) }
		p.first = p.mk()
		p.idle[putSide] = []M{p.first}
		p.idle[takeSide] = []M{p.first}
		return p
	}).first
}
