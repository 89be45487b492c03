package runtime

// RWLock is a shared read/write lock on a znode directory, the ZooKeeper
// guide's shared-lock recipe. Read and Write give the two sides, each a Lock
// with the lock methods:
//
//   - a reader holds the lock when no writer came before it: readers share
//     the lock, and any number of them run together;
//   - a writer holds the lock alone, once everyone who came before it has
//     released it.
//
// Contenders are queued in arrival order, so a waiting writer is not
// starved by readers that arrive after it: they queue behind it. A release
// wakes only the contenders it unblocks (see the lock protocol in lock.go).
//
// Node names are Curator's InterProcessReadWriteLock names
// (_c_<uuid>-__READ__<seq>, _c_<uuid>-__WRIT__<seq>) or, with
// WithLayout(LayoutKazoo), kazoo's (<hex>__rlock__<seq>, <hex>__lock__<seq>).
type RWLock struct {
	s    *Session
	p    Path
	opts []LockOption
}

// NewRWLock returns a read/write lock handle on the directory p. It does no
// I/O. If p is invalid, every method of its sides returns p's error.
func NewRWLock(s *Session, p Path, opts ...LockOption) *RWLock {
	return &RWLock{s: s, p: p, opts: opts}
}

// Path returns the lock's directory.
func (rw *RWLock) Path() string { return rw.p.String() }

// Read returns a new read-side contender.
func (rw *RWLock) Read() LockHandle { return rw.side(kindRead) }

// Write returns a new write-side contender.
func (rw *RWLock) Write() LockHandle { return rw.side(kindWrite) }

func (rw *RWLock) side(kind int) *Lock {
	l := NewLock(rw.s, rw.p, rw.opts...)
	l.fam = curatorRW
	if l.cfg.layout == LayoutKazoo {
		l.fam = kazooRW
	}
	l.kind = kind
	return l
}

// The read/write lock's node families.
var (
	// Curator's InterProcessReadWriteLock: _c_<uuid>-__READ__<seq>, _c_<uuid>-__WRIT__<seq>.
	curatorRW = &family{markers: []string{"__READ__", "__WRIT__"}, blockedBy: [][]bool{{false, true}, {true, true}}}
	// kazoo's ReadLock/WriteLock: <hex>__rlock__<seq>, <hex>__lock__<seq>.
	kazooRW = &family{markers: []string{"__rlock__", "__lock__"}, blockedBy: [][]bool{{false, true}, {true, true}}, kazoo: true}
)
