package runtime

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// read reads mark m's path once: an instance's data and stat, or the
// children of a node on the way to the instances. In one-shot mode the
// read sets the path's watch (see the protocol in cache_run.go) unless
// it is set already: go-zookeeper keeps a set watch across reconnections
// (it sets it again on each new connection) until it fires, and a
// notification of the path says it fired. A missing node is found false.
func (r *cacheRun[K, T]) read(ctx context.Context, m takenMark) cacheRead {
	depth, _ := r.c.tmpl.depth(m.path)
	list := depth < r.c.tmpl.Len()
	watch := r.feed.oneShot.Load() && (m.notified || !r.armed[m.path])
	r.c.countRead(list, watch)
	conn := r.s.Conn()
	stat := r.c.cfg.statOnly
	rd, err := client.Await(ctx, r.s, func() (cacheRead, error) { return readNode(conn, m.path, list, watch, stat) })
	rd.found, rd.err, rd.watched = err == nil, err, watch && err == nil
	if errors.Is(err, zk.ErrNoNode) {
		rd.err = nil
		if r.feed.oneShot.Load() && depth == 0 && (m.notified || !r.baseAwaited) {
			rd.err = r.awaitBase(ctx)
			rd.awaited = rd.err == nil
		}
	}
	return rd
}

// readNode reads path's children (list) or its data, leaving a child or a
// data watch when watch is set. Without a watch, stat reads the stat
// alone; with one it reads the data too, as an exists watch set on a
// node found missing would stay on the server until the path is created
// again, which a queue's items never are.
func readNode(conn *zk.Conn, path string, list, watch, stat bool) (rd cacheRead, err error) {
	switch {
	case !list && !watch && stat:
		return readStat(conn, path)
	case list && watch:
		rd.kids, rd.stat, _, err = conn.ChildrenW(path)
	case list:
		rd.kids, rd.stat, err = conn.Children(path)
	case watch:
		rd.data, rd.stat, _, err = conn.GetW(path)
	default:
		rd.data, rd.stat, err = conn.Get(path)
	}
	return rd, err
}

// readStat reads path's stat without a watch. A missing node is
// zk.ErrNoNode.
func readStat(conn *zk.Conn, path string) (rd cacheRead, err error) {
	ok, stat, err := conn.Exists(path)
	if err == nil && !ok {
		err = zk.ErrNoNode
	}
	rd.stat = stat
	return rd, err
}

// awaitBase leaves an exists watch on the missing base, which fires when
// it is created (one-shot mode: no node above the base is watched). If the
// base exists by now, it reports a change, so that it is read again.
func (r *cacheRun[K, T]) awaitBase(ctx context.Context) error {
	base := r.c.tmpl.base
	r.c.countRead(true, true)
	ok, err := client.Await(ctx, r.s, func() (bool, error) {
		ok, _, _, err := r.s.Conn().ExistsW(base)
		return ok, err
	})
	if err == nil && ok {
		return errBaseCreated
	}
	return err
}

// errBaseCreated is the result of a read of the missing base that found
// it created by the time its exists watch was set: read it again.
var errBaseCreated = errors.New("cache: base created meanwhile")

// instancesBelow returns the children of node path (depth segments below
// the base) that are on the way to the cache's instances, or instances:
// those whose name matches the template's next segment.
func (c *Cache[K, T]) instancesBelow(path string, depth int, kids []string) []string {
	seg := c.tmpl.segs[depth]
	out := make([]string, 0, len(kids))
	for _, k := range kids {
		if seg.matches(k) {
			out = append(out, joinPath(path, k))
		}
	}
	return out
}

// countRead counts a read in the cache's stats: a listing or a read of
// data, setting a watch or not.
func (c *Cache[K, T]) countRead(list, watch bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if list {
		c.stats.Lists++
	} else {
		c.stats.Reads++
	}
	if watch {
		c.stats.Watches++
	}
}
