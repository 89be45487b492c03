package inspect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// Mirror is the one mirror of a spec's tree that zkgen inspect and zkgen
// serve read: a runtime.Cache of each resource's instances, all based on
// the spec's root, so that on ZooKeeper 3.6 and later they share one
// persistent recursive watch on it (on 3.5, one-shot watches on the
// nodes on the way to the instances and on each instance). A resource
// with parameters has as instances the nodes its last parameter names
// (the literals after it appended); one without has its declared path,
// whether the node exists or not. The caches hold no data: what an
// instance's state is, Read reads.
type Mirror struct {
	spec   *spec.Spec
	caches []*runtime.Cache[string, struct{}] // per resource, spec order
	tails  []string                           // literals after each resource's last parameter, "/a/b"
}

// MirrorEvent is a change of a resource's instances, or a gap, a resync
// or a failure of its cache (Kind, as runtime.CacheEvent's).
type MirrorEvent struct {
	Resource *spec.Resource
	Kind     runtime.CacheEventKind
	Path     string // the instance's path, for Added, Changed and Removed
	Err      error  // for Failed
}

// NewMirror returns the mirror of s's resources. subtree, when not nil,
// is called with an instance's path each time a notification names the
// instance or a node below it (runtime.WithSubtree: every change below
// in persistent mode, the instance's own in one-shot mode); it must not
// block. The mirror holds nothing until Run.
func NewMirror(s *spec.Spec, subtree func(r *spec.Resource, instance string)) (*Mirror, error) {
	m := &Mirror{spec: s}
	for _, r := range s.Resources {
		tmpl, tail := template(s, r)
		var opts []runtime.CacheOption
		if subtree != nil {
			opts = append(opts, runtime.WithSubtree(func(inst, _ string) { subtree(r, inst+tail) }))
		}
		c, err := runtime.NewCache(tmpl, runtime.PathKey, runtime.Codec[struct{}](noData{}), opts...)
		if err != nil {
			return nil, err
		}
		m.caches, m.tails = append(m.caches, c), append(m.tails, tail)
	}
	return m, nil
}

// template is the template of r's instances, based on s's root and
// ending at r's last parameter, and the literals after it.
func template(s *spec.Spec, r *spec.Resource) (runtime.Template, string) {
	segs := r.Segments[rootDepth(s):]
	last := len(segs) - 1
	for last >= 0 && segs[last].Param == nil && len(r.Params) > 0 {
		last--
	}
	t := runtime.TemplateAt(s.RootPath())
	for _, seg := range segs[:last+1] {
		switch {
		case seg.Param == nil:
			t = t.Lit(seg.Literal)
		case seg.Param.Type == "int":
			t = t.Int(seg.Param.Name)
		default:
			t = t.Str(seg.Param.Name)
		}
	}
	var tail strings.Builder
	for _, seg := range segs[last+1:] {
		tail.WriteString("/" + seg.Literal)
	}
	return t, tail.String()
}

// noData is the mirror's codec: it keeps no data.
type noData struct{}

func (noData) Encode(struct{}) ([]byte, error) { return nil, nil }
func (noData) Decode([]byte) (struct{}, error) { return struct{}{}, nil }

// Run runs every cache on sess until ctx ends (it returns nil), sess ends
// (it returns sess.Err()); a cache that stops (runtime.ErrCacheFull)
// stops alone, and its resource's Instances report it.
func (m *Mirror) Run(ctx context.Context, sess *runtime.Session) error {
	errs := make([]error, len(m.caches))
	var wg sync.WaitGroup
	for i, c := range m.caches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Run(ctx, sess); !errors.Is(err, runtime.ErrCacheFull) {
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	return FirstError(errs)
}

// Follow runs a mirror of s on sess until stop is called (stop waits for
// the run to end), ctx ends or sess does. It does not wait for the
// mirror to load: Sync does. A command that reads the tree repeatedly
// (inspect --watch) keeps one, so that each GatherFrom reads only the
// instances, not the whole tree again.
func Follow(ctx context.Context, sess *runtime.Session, s *spec.Spec) (m *Mirror, stop func(), err error) {
	if m, err = NewMirror(s, nil); err != nil {
		return nil, nil, err
	}
	mctx, cancel := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); _ = m.Run(mctx, sess) }()
	return m, func() { cancel(); <-ran }, nil
}

// Sync waits until every cache reflects every change made before the
// call (runtime.Cache.Sync); a cache that stopped is skipped. It returns
// ctx's error, or the session's end.
func (m *Mirror) Sync(ctx context.Context) error {
	for _, c := range m.caches {
		if err := c.Sync(ctx); err != nil && !errors.Is(err, runtime.ErrCacheFull) {
			return err
		}
	}
	return nil
}

// Instances returns r's instances as the mirror holds them, in inspect's
// order: parameter by parameter, ints numerically, strings bytewise. Its
// error is why r's cache stopped (runtime.ErrCacheFull).
func (m *Mirror) Instances(r *spec.Resource) ([]Instance, error) {
	i := slices.Index(m.spec.Resources, r)
	if len(r.Params) == 0 {
		return []Instance{{Path: r.FullPath}}, nil
	}
	snap, err := m.caches[i].Snapshot()
	if err != nil {
		return nil, err
	}
	out := make([]Instance, 0, len(snap.Entries))
	for _, e := range snap.Entries {
		p, _ := m.caches[i].Template().Match(e.Path)
		in := Instance{Path: e.Path + m.tails[i]}
		for j := range p.Len() {
			in.Params = append(in.Params, Param{Name: p.At(j).Name, Value: p.At(j).Value})
		}
		out = append(out, in)
	}
	slices.SortFunc(out, compareInstances(r))
	return out, nil
}

// WatchBelow sets a one-shot watch for an instance of r through r's cache
// (runtime.Cache.WatchBelow): one of the Watches of the instance who, in
// one-shot mode, where the mirror's caches watch nothing below the
// instances. notify is called when it fires.
func (m *Mirror) WatchBelow(ctx context.Context, r *spec.Resource, path string, data, list bool, who string, notify func()) ([]string, error) {
	return m.caches[slices.Index(m.spec.Resources, r)].WatchBelow(ctx, path, data, list, who, notify)
}

// compareInstances orders instances of r parameter by parameter.
func compareInstances(r *spec.Resource) func(a, b Instance) int {
	return func(a, b Instance) int {
		for j, p := range r.Params {
			if c := compareValues(p.Type, a.Params[j].Value, b.Params[j].Value); c != 0 {
				return c
			}
		}
		return 0
	}
}

// Mode is how the mirror learns of changes: persistent when every cache
// has its persistent watch, one-shot as soon as one falls back.
func (m *Mirror) Mode() runtime.CacheMode {
	mode := runtime.CachePersistent
	for _, c := range m.caches {
		switch c.Mode() {
		case runtime.CacheOneShot:
			return runtime.CacheOneShot
		case runtime.CacheStarting:
			mode = runtime.CacheStarting
		}
	}
	return mode
}

// Stats sums the caches' counters; Mode is the mirror's, Zxid the
// least, Synced whether all are.
func (m *Mirror) Stats() runtime.CacheStats {
	sum := runtime.CacheStats{Mode: m.Mode(), Synced: true}
	for i, c := range m.caches {
		st := c.Stats()
		sum.Nodes += st.Nodes
		sum.Runs = max(sum.Runs, st.Runs)
		sum.Gaps, sum.Notifications = sum.Gaps+st.Gaps, sum.Notifications+st.Notifications
		sum.Reads, sum.Lists, sum.Watches = sum.Reads+st.Reads, sum.Lists+st.Lists, sum.Watches+st.Watches
		sum.WatchesBelow += st.WatchesBelow
		sum.DecodeErrors, sum.Pending, sum.Coalesced = sum.DecodeErrors+st.DecodeErrors, sum.Pending+st.Pending, sum.Coalesced+st.Coalesced
		sum.Synced = sum.Synced && st.Synced
		if i == 0 || st.Zxid < sum.Zxid {
			sum.Zxid = st.Zxid
		}
	}
	return sum
}

// Events returns the changes of every resource's instances until ctx
// ends (then the channel closes), each cache's stream as
// runtime.Cache.Events promises it: it starts with an Added per instance
// held and Synced when the cache is synced.
func (m *Mirror) Events(ctx context.Context) <-chan MirrorEvent {
	out := make(chan MirrorEvent)
	var wg sync.WaitGroup
	for i, c := range m.caches {
		r := m.spec.Resources[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range c.Events(ctx) {
				me := MirrorEvent{Resource: r, Kind: ev.Kind, Err: ev.Err}
				if ev.Path != "" {
					me.Path = ev.Path + m.tails[i]
				}
				select {
				case out <- me:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(out) }()
	return out
}

// compareValues orders two values of a parameter of type typ.
func compareValues(typ, a, b string) int {
	if typ == "int" {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		if c := cmp.Compare(x, y); c != 0 {
			return c
		}
	}
	return strings.Compare(a, b)
}

// FirstError returns the first non-nil error of errs, saying how many
// others failed too, on one line (an error text is one line in logs);
// nil when every err is nil.
func FirstError(errs []error) error {
	var first error
	more := 0
	for _, err := range errs {
		switch {
		case err == nil:
		case first == nil:
			first = err
		default:
			more++
		}
	}
	if more > 0 {
		return fmt.Errorf("%w (and %d more)", first, more)
	}
	return first
}
