package serve

import (
	"errors"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/internal/inspect"
)

// owner is what a watch stands for: a resource's instance (path set), or
// the discovery of a resource's instances (path empty).
type owner struct {
	res  string
	path string
}

// wkey is one watch on the server: ZooKeeper keeps one children watch and
// one data/exists watch per path and session however often it is asked.
type wkey struct {
	path string
	data bool
}

// watcher sets one-shot watches on one session and reports, for each that
// fires, the owners that asked for it: the watches below the instances
// (inspect.Watches) that the model needs when its mirror runs in one-shot
// mode (ZooKeeper 3.5), where no persistent watch reports them. It asks the server for a watch only when
// that watch is not already set, so each path costs at most two watches
// whatever the number of owners.
type watcher struct {
	conn   *zk.Conn
	events chan owner
	quit   chan struct{}

	mu    sync.Mutex
	armed map[wkey]map[owner]bool

	watches  atomic.Int64 // set now
	requests atomic.Int64 // sent by the watcher (the readers' are not counted here)
}

func newWatcher(conn *zk.Conn) *watcher {
	return &watcher{conn: conn, events: make(chan owner, 4096), quit: make(chan struct{}), armed: map[wkey]map[owner]bool{}}
}

func (w *watcher) stop() { close(w.quit) }

// join adds o to k's owners and reports whether k is set already.
func (w *watcher) join(k wkey, o owner) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if os, ok := w.armed[k]; ok {
		os[o] = true
		return true
	}
	return false
}

// wait records k as set for o and, when ch delivers, reports k's owners.
func (w *watcher) wait(k wkey, o owner, ch <-chan zk.Event) {
	w.mu.Lock()
	w.armed[k] = map[owner]bool{o: true}
	w.mu.Unlock()
	w.watches.Add(1)
	go func() {
		select {
		case <-ch:
		case <-w.quit:
			return
		}
		w.mu.Lock()
		os := w.armed[k]
		delete(w.armed, k)
		w.mu.Unlock()
		w.watches.Add(-1)
		for o := range os {
			select {
			case w.events <- o:
			case <-w.quit:
				return
			}
		}
	}()
}

// children returns path's children (nil when it does not exist) and makes
// sure a watch for o stands on them: a children watch, or an exists watch
// while path is absent. need says whether the caller needs the listing; a
// path whose watch is set already costs no request when it does not.
func (w *watcher) children(path string, o owner, need bool) ([]string, error) {
	k := wkey{path: path}
	if w.join(k, o) {
		if !need {
			return nil, nil
		}
		w.requests.Add(1)
		kids, _, err := w.conn.Children(path)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		return kids, err
	}
	for {
		w.requests.Add(1)
		kids, _, ch, err := w.conn.ChildrenW(path)
		if err == nil {
			w.wait(k, o, ch)
			return kids, nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return nil, err
		}
		w.requests.Add(1)
		ok, _, ch, err := w.conn.ExistsW(path)
		if err != nil {
			return nil, err
		}
		if !ok {
			w.wait(k, o, ch)
			return nil, nil
		}
		// created between the two requests: go-zookeeper delivers that
		// exists watch, which nobody waits for; list again.
	}
}

// data makes sure a data watch (an exists watch while absent) for o
// stands on path.
func (w *watcher) data(path string, o owner) error {
	k := wkey{path: path, data: true}
	if w.join(k, o) {
		return nil
	}
	w.requests.Add(1)
	_, _, ch, err := w.conn.ExistsW(path)
	if err != nil {
		return err
	}
	w.wait(k, o, ch)
	return nil
}

// arm sets the watches of wt for o, expanding its "*" segments against
// the children of the node before them (whose children watch it sets too,
// so that a new match is noticed). listed caches the listings of this pass.
func (w *watcher) arm(wt inspect.Watch, o owner, listed map[string][]string) error {
	targets := []string{""}
	segs := strings.Split(strings.TrimPrefix(wt.Path, "/"), "/")
	for _, seg := range segs {
		var next []string
		for _, t := range targets {
			if !strings.Contains(seg, "*") {
				next = append(next, t+"/"+seg)
				continue
			}
			parent := t
			if parent == "" {
				parent = "/"
			}
			kids, ok := listed[parent]
			if !ok {
				var err error
				if kids, err = w.children(parent, o, true); err != nil {
					return err
				}
				listed[parent] = kids
			}
			for _, kid := range kids {
				if m, _ := path.Match(seg, kid); m {
					next = append(next, t+"/"+kid)
				}
			}
		}
		targets = next
	}
	for _, t := range targets {
		if wt.Children {
			if _, err := w.children(t, o, false); err != nil {
				return err
			}
		}
		if wt.Data {
			if err := w.data(t, o); err != nil {
				return err
			}
		}
	}
	return nil
}
