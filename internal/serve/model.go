// Package serve keeps a live model of the resources a spec declares, from
// ZooKeeper watches, and serves it to monitoring systems (Prometheus
// metrics), to people (a live page) and to programs (/api/state): the
// engine of zkgen serve. It only reads: nothing here writes to ZooKeeper.
package serve

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/internal/inspect"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// Options configure a Model.
type Options struct {
	Spec *spec.Spec
	// Dial opens a session; the model opens another after an expiry.
	Dial func(ctx context.Context) (*runtime.Session, error)
	// MaxInstances caps the instances followed per resource; those past
	// it (in inspect's instance order) are cut and counted. 0: 1000.
	MaxInstances int
	// Settle is how long the model gathers watch events before it reads
	// what they touched, so a burst of changes costs one read per
	// instance. 0: 100ms.
	Settle time.Duration
	Log    *slog.Logger
}

// failedPassRetry is how long the model waits before it reads again what
// a failed pass left unread, when nothing else wakes it.
const failedPassRetry = time.Second

// Model is the live state of a spec's resources. Run keeps it current;
// State, Collect (metrics) and Changed read it from other goroutines.
type Model struct {
	opt Options

	mu        sync.Mutex
	insts     map[string][]*instance // resource name → followed instances, in instance order
	listErr   map[string]error       // resource name → why its instances could not be listed
	cut       map[string]int         // resource name → instances past MaxInstances
	up        bool                   // a session is connected and the model current
	since     time.Time              // start of the outage, or of the connection
	reason    string                 // why ZooKeeper is not up
	session   int64                  // current session id
	sessions  int                    // sessions opened
	reads     int64                  // instance reads done
	mirror    *inspect.Mirror        // the current session's
	changed   chan struct{}          // closed and replaced at every change
	requests0 int64                  // requests of the mirrors of ended sessions
}

type instance struct {
	in  inspect.Instance
	res inspect.Resource
	ok  bool // res has been read at least once
}

// New returns a model of o.Spec; Run makes it live.
func New(o Options) *Model {
	if o.MaxInstances <= 0 {
		o.MaxInstances = 1000
	}
	if o.Settle <= 0 {
		o.Settle = 100 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Model{opt: o, insts: map[string][]*instance{}, listErr: map[string]error{}, cut: map[string]int{},
		changed: make(chan struct{}), since: time.Now(), reason: "not connected yet"}
}

// Changed returns a channel closed at the model's next change.
func (m *Model) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// bump wakes Changed's waiters; m.mu is held.
func (m *Model) bump() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// Run keeps the model current until ctx ends: it opens a session, mirrors
// the spec's instances on it, reads each, and reads again what the
// mirror reports changed. After the session ends it opens another and reads
// everything again; while there is none the model is down (an outage),
// keeping what it last read.
func (m *Model) Run(ctx context.Context) {
	backoff := 250 * time.Millisecond
	for ctx.Err() == nil {
		sess, err := m.opt.Dial(ctx)
		if err != nil {
			m.down(err.Error())
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 250 * time.Millisecond
		m.follow(ctx, sess)
		sess.Close()
	}
}

// down marks an outage (keeping its start when one is going on).
func (m *Model) down(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.up {
		m.since = time.Now()
	}
	m.up, m.reason = false, reason
	m.bump()
}

// follow keeps the model current on one session until it ends or ctx does.
// The instances come from an inspect.Mirror on the session (one
// persistent recursive watch on the spec's root, or one-shot watches on
// ZooKeeper 3.5), which also tells which instances changed below; the
// model reads those again. In one-shot mode, where no watch stands below
// the instances, the model sets the kinds' own watches (inspect.Watches).
func (m *Model) follow(ctx context.Context, sess *runtime.Session) {
	t := newTouches()
	mir, err := inspect.NewMirror(m.opt.Spec, t.add)
	if err != nil {
		m.down(err.Error())
		<-ctx.Done()
		return
	}
	mctx, cancel := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); _ = mir.Run(mctx, sess) }()
	defer func() {
		cancel()
		<-ran
		m.mu.Lock()
		st := mir.Stats()
		m.requests0 += st.Lists + st.Reads
		m.mirror = nil
		m.mu.Unlock()
	}()
	m.mu.Lock()
	m.mirror, m.session = mir, sess.ID()
	m.sessions++
	m.mu.Unlock()
	go m.monitor(mctx, sess)
	m.loop(ctx, sess, mir, t, mir.Events(mctx))
}

// loop reads what the mirror and the watches report, a settle window at a
// time, until the session or ctx ends.
func (m *Model) loop(ctx context.Context, sess *runtime.Session, mir *inspect.Mirror, t *touches, events <-chan inspect.MirrorEvent) {
	d := newDirty()
	var again <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-sess.Done():
			m.down("session ended: " + errText(sess.Err()))
			return
		case ev, ok := <-events:
			if !ok {
				return // ctx ended
			}
			d.event(ev)
		case <-t.wake:
		case <-again:
		}
		m.settle(ctx, events, d)
		t.drain(d)
		if err := m.catchUp(ctx, sess, mir, t, d); err != nil && !runtime.IsRecoverable(err) && ctx.Err() == nil && sess.Err() == nil {
			m.opt.Log.Warn("reading the resources failed", "err", err)
		}
		// What a failed pass left is read again after failedPassRetry (a
		// blip the monitor did not see, a server that answered with an
		// error); after a reconnection the mirror's resync reads it all.
		again = nil
		if d.empty() && t.empty() {
			m.current(sess, mir)
		} else {
			again = time.After(failedPassRetry)
		}
	}
}

// settle gathers the events that arrive within Settle of the first.
func (m *Model) settle(ctx context.Context, events <-chan inspect.MirrorEvent, d *dirty) {
	t := time.NewTimer(m.opt.Settle)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			d.event(ev)
		}
	}
}

// monitor follows the connection's state (go-zookeeper's, no request):
// the model is down while the session has no connection. Once it has
// one again, the mirror resyncs and its Synced events make the model
// read everything again (watches that fired in between were missed).
func (m *Model) monitor(ctx context.Context, sess *runtime.Session) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	was := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st := sess.Conn().State()
		connected := st == zk.StateHasSession
		if was && !connected {
			m.down("connection lost (" + st.String() + ")")
		}
		was = connected
	}
}

// current marks the model up to date on sess, once the mirror is synced.
func (m *Model) current(sess *runtime.Session, mir *inspect.Mirror) {
	if sess.Conn().State() != zk.StateHasSession || !mir.Stats().Synced {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.up {
		m.up, m.reason, m.since = true, "", time.Now()
		m.bump()
	}
}

func errText(err error) string {
	if err == nil {
		return "closed"
	}
	return err.Error()
}

// catchUp reads what d holds: the resources whose instances must be taken
// from the mirror again, then the instances whose state must be read. What
// fails stays in d for the next pass.
func (m *Model) catchUp(ctx context.Context, sess *runtime.Session, mir *inspect.Mirror, t *touches, d *dirty) error {
	for _, r := range m.opt.Spec.Resources {
		if d.discover[r.Name] {
			m.discover(mir, r, d)
			delete(d.discover, r.Name)
		}
	}
	oneShot := mir.Mode() == runtime.CacheOneShot
	for _, r := range m.opt.Spec.Resources {
		var todo []inspect.Instance
		for _, in := range m.followed(r.Name) {
			if d.all[r.Name] || d.read[owner{res: r.Name, path: in.Path}] {
				todo = append(todo, in)
			}
		}
		errs := m.refreshAll(ctx, sess, mir, t, oneShot, r, todo)
		for i, in := range todo {
			if errs[i] == nil {
				delete(d.read, owner{res: r.Name, path: in.Path})
			}
		}
		if err := inspect.FirstError(errs); err != nil {
			return err // d.all stays: every instance is read again
		}
		delete(d.all, r.Name)
	}
	clear(d.read) // instances no longer followed
	return nil
}

// refreshReaders is the most instance reads a pass has in flight.
const refreshReaders = 16

// refreshAll reads the instances ins of r, refreshReaders at a time, and
// returns each one's error.
func (m *Model) refreshAll(ctx context.Context, sess *runtime.Session, mir *inspect.Mirror, t *touches, oneShot bool, r *spec.Resource, ins []inspect.Instance) []error {
	errs := make([]error, len(ins))
	sem := make(chan struct{}, refreshReaders)
	var wg sync.WaitGroup
	for i, in := range ins {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = m.refresh(ctx, sess, mir, t, oneShot, r, in)
		}()
	}
	wg.Wait()
	return errs
}

// followed lists the instances of resource name the model follows.
func (m *Model) followed(name string) []inspect.Instance {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]inspect.Instance, len(m.insts[name]))
	for i, in := range m.insts[name] {
		out[i] = in.in
	}
	return out
}

// discover takes r's instances from the mirror, keeps the first
// MaxInstances, and marks new ones for reading.
func (m *Model) discover(mir *inspect.Mirror, r *spec.Resource, d *dirty) {
	ins, err := mir.Instances(r)
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.bump()
	if err != nil {
		m.listErr[r.Name] = err
		return
	}
	cut := 0
	if len(ins) > m.opt.MaxInstances {
		cut = len(ins) - m.opt.MaxInstances
		ins = ins[:m.opt.MaxInstances]
	}
	old := map[string]*instance{}
	for _, in := range m.insts[r.Name] {
		old[in.in.Path] = in
	}
	next := make([]*instance, len(ins))
	for i, in := range ins {
		if o, ok := old[in.Path]; ok {
			next[i] = o
			continue
		}
		next[i] = &instance{in: in}
		d.read[owner{res: r.Name, path: in.Path}] = true
	}
	m.insts[r.Name], m.cut[r.Name] = next, cut
	delete(m.listErr, r.Name)
}

// refresh reads one instance. In one-shot mode it first sets the kind's
// watches below it, through the mirror (arm): a change after they are set
// is reported by them, so none is missed. (In persistent mode the mirror's
// watch reports them.)
func (m *Model) refresh(ctx context.Context, sess *runtime.Session, mir *inspect.Mirror, t *touches, oneShot bool, r *spec.Resource, in inspect.Instance) error {
	if oneShot {
		listed := map[string][]string{}
		for _, wt := range inspect.Watches(r, in.Path) {
			if err := arm(ctx, mir, r, in, wt, t, listed); err != nil {
				return err
			}
		}
	}
	res, err := inspect.Read(ctx, sess, r, in)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	for _, it := range m.insts[r.Name] {
		if it.in.Path == in.Path {
			it.res, it.ok = res, true
		}
	}
	m.bump()
	return nil
}

// dirty is what the model must read again.
type dirty struct {
	discover map[string]bool // resource names: take the instances again
	read     map[owner]bool  // instances
	all      map[string]bool // resource names: read every followed instance
}

func newDirty() *dirty {
	return &dirty{discover: map[string]bool{}, read: map[owner]bool{}, all: map[string]bool{}}
}

func (d *dirty) empty() bool { return len(d.discover) == 0 && len(d.read) == 0 && len(d.all) == 0 }

func (d *dirty) add(o owner) { d.read[o] = true }

// event notes a change of the mirror: an instance added or removed is a
// new discovery; a resync done (Synced, after the first load and after
// each reconnection) reads the resource's instances all again; a cache
// that failed is the resource's listing error (discover reports it).
func (d *dirty) event(ev inspect.MirrorEvent) {
	switch ev.Kind {
	case runtime.CacheAdded, runtime.CacheRemoved, runtime.CacheFailed:
		d.discover[ev.Resource.Name] = true
	case runtime.CacheSynced:
		d.discover[ev.Resource.Name] = true
		d.all[ev.Resource.Name] = true
	}
}

// touches are the instances the mirror reported changed below, gathered
// on the session's event delivery (add must not block) for the loop.
type touches struct {
	mu   sync.Mutex
	set  map[owner]bool
	wake chan struct{}
}

func newTouches() *touches { return &touches{set: map[owner]bool{}, wake: make(chan struct{}, 1)} }

// add notes that the instance of r at path, or a node below it, changed.
func (t *touches) add(r *spec.Resource, path string) {
	t.mu.Lock()
	t.set[owner{res: r.Name, path: path}] = true
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// drain moves the touched instances to d.
func (t *touches) drain(d *dirty) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for o := range t.set {
		d.add(o)
	}
	clear(t.set)
}

func (t *touches) empty() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.set) == 0
}
