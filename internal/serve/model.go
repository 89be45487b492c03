// Package serve keeps a live model of the resources a spec declares, from
// ZooKeeper watches, and serves it to monitoring systems (Prometheus
// metrics), to people (a live page) and to programs (/api/state): the
// engine of zkgen serve. It only reads: nothing here writes to ZooKeeper.
package serve

import (
	"context"
	"errors"
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
	watcher   *watcher               // the current session's
	changed   chan struct{}          // closed and replaced at every change
	requests0 int64                  // requests of the watchers of ended sessions
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

// Run keeps the model current until ctx ends: it opens a session, reads
// every resource while setting its watches, and reads again what each
// watch reports. After the session ends it opens another and reads
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
func (m *Model) follow(ctx context.Context, sess *runtime.Session) {
	w := newWatcher(sess.Conn())
	defer func() {
		w.stop()
		m.mu.Lock()
		m.requests0 += w.requests.Load()
		m.watcher = nil
		m.mu.Unlock()
	}()
	m.mu.Lock()
	m.watcher, m.session = w, sess.ID()
	m.sessions++
	m.mu.Unlock()

	reconnected := make(chan struct{}, 1)
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go m.monitor(mctx, sess, reconnected)

	d := newDirty()
	d.everything(m.opt.Spec)
	for {
		if err := m.catchUp(ctx, sess, w, d); err != nil && !runtime.IsRecoverable(err) && ctx.Err() == nil && sess.Err() == nil {
			m.opt.Log.Warn("reading the resources failed", "err", err)
		}
		// What a failed pass left is read again after a reconnection, or
		// after failedPassRetry when the connection stayed (a blip the
		// monitor did not see, a server that answered with an error).
		var again <-chan time.Time
		if d.empty() {
			m.current(sess)
		} else {
			again = time.After(failedPassRetry)
		}
		select {
		case <-ctx.Done():
			return
		case <-sess.Done():
			m.down("session ended: " + errText(sess.Err()))
			return
		case <-reconnected:
			d.everything(m.opt.Spec)
		case o := <-w.events:
			d.add(o)
		case <-again:
		}
		m.settle(ctx, w, d)
	}
}

// settle gathers the events that arrive within Settle of the first.
func (m *Model) settle(ctx context.Context, w *watcher, d *dirty) {
	t := time.NewTimer(m.opt.Settle)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case o := <-w.events:
			d.add(o)
		}
	}
}

// monitor follows the connection's state (go-zookeeper's, no request):
// the model is down while the session has no connection, and reads
// everything again once it has one, since watches that fired in between
// may have been missed.
func (m *Model) monitor(ctx context.Context, sess *runtime.Session, reconnected chan<- struct{}) {
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
		switch {
		case was && !connected:
			m.down("connection lost (" + st.String() + ")")
		case !was && connected:
			select {
			case reconnected <- struct{}{}:
			default:
			}
		}
		was = connected
	}
}

// current marks the model up to date on sess.
func (m *Model) current(sess *runtime.Session) {
	if sess.Conn().State() != zk.StateHasSession {
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

// catchUp reads what d holds: the resources whose instances must be listed
// again, then the instances whose state must be read. What fails stays in
// d for the next pass (after a reconnection, everything is read anyway).
func (m *Model) catchUp(ctx context.Context, sess *runtime.Session, w *watcher, d *dirty) error {
	for _, r := range m.opt.Spec.Resources {
		if !d.discover[r.Name] {
			continue
		}
		if err := m.discover(ctx, w, r, d); err != nil {
			return err
		}
		delete(d.discover, r.Name)
	}
	for _, r := range m.opt.Spec.Resources {
		for _, in := range m.followed(r.Name) {
			if !d.all && !d.read[owner{res: r.Name, path: in.Path}] {
				continue
			}
			if err := m.refresh(ctx, sess, w, r, in); err != nil {
				return err
			}
			delete(d.read, owner{res: r.Name, path: in.Path})
		}
	}
	clear(d.read) // instances no longer followed
	d.all = false
	return nil
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

// discover lists r's instances (setting watches on the listed nodes),
// keeps the first MaxInstances, and marks new ones for reading.
func (m *Model) discover(ctx context.Context, w *watcher, r *spec.Resource, d *dirty) error {
	ins, err := inspect.Expand(ctx, lister{w: w, o: owner{res: r.Name}}, r)
	if err != nil {
		if runtime.IsRecoverable(err) || errors.Is(err, zk.ErrConnectionClosed) || ctx.Err() != nil {
			return err
		}
		m.mu.Lock()
		m.listErr[r.Name] = err
		m.bump()
		m.mu.Unlock()
		return nil
	}
	cut := 0
	if len(ins) > m.opt.MaxInstances {
		cut = len(ins) - m.opt.MaxInstances
		ins = ins[:m.opt.MaxInstances]
	}
	m.mu.Lock()
	defer m.mu.Unlock()
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
	m.bump()
	return nil
}

// refresh sets the watches of one instance, then reads it: a change after
// the watches are set is reported by them, so none is missed.
func (m *Model) refresh(ctx context.Context, sess *runtime.Session, w *watcher, r *spec.Resource, in inspect.Instance) error {
	o := owner{res: r.Name, path: in.Path}
	listed := map[string][]string{}
	for _, wt := range inspect.Watches(r, in.Path) {
		if err := w.arm(wt, o, listed); err != nil {
			return err
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
	discover map[string]bool // resource names
	read     map[owner]bool  // instances
	all      bool            // every followed instance
}

func newDirty() *dirty { return &dirty{discover: map[string]bool{}, read: map[owner]bool{}} }

func (d *dirty) empty() bool { return len(d.discover) == 0 && len(d.read) == 0 && !d.all }

// everything marks every resource for listing and every instance for
// reading.
func (d *dirty) everything(s *spec.Spec) {
	for _, r := range s.Resources {
		d.discover[r.Name] = true
	}
	d.all = true
}

func (d *dirty) add(o owner) {
	if o.path == "" {
		d.discover[o.res] = true
		return
	}
	d.read[o] = true
}
