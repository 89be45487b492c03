package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// A recipe whose protocol depends on parameters of the spec — a semaphore's
// leases, a double barrier's size, a queue's delivery and priority levels, a
// lock's layout, a partitioner's partition count — records them in its directory node when it creates it,
// and a handle whose parameters do not fit the record refuses to take part
// (ErrSpecMismatch) instead of silently running another protocol beside the
// processes that wrote it: during a rolling deploy, old and new binaries run
// side by side, each with the topology it was generated from. The rules are
// zkgen breaking's: the kind, leases, size, delivery, layout and partition
// count must be equal; a priority queue may have more levels than recorded (a lowest level
// appended), not fewer. A directory created without a record (by an older
// zkgen, or by a peer library sharing a lock) is accepted as it is.
//
// The record lives as long as the directory, a container node that the
// server removes once empty, and is written again with it. It costs one read
// per directory and session, never one per operation.

// specRecord is the data of a recipe directory.
type specRecord struct {
	Zkgen  int    `json:"zkgen"` // format version: 1
	Kind   string `json:"kind"`
	Leases int    `json:"leases,omitempty"`
	Size   int    `json:"size,omitempty"`
	Levels int    `json:"levels,omitempty"`
	// Priorities are the level names, when the handle knows them.
	Priorities []string     `json:"priorities,omitempty"`
	Delivery   string       `json:"delivery,omitempty"`
	Layout     recordLayout `json:"layout,omitempty"`
	Partitions int          `json:"partitions,omitempty"` // a partitioner's partition count
	// Released is the lock node whose holder released it last (lock.go,
	// the hand-off); not a parameter of the spec.
	Released string `json:"released,omitempty"`
}

// recordLayout is a record's layout: how the directory's nodes are named
// and kept.
type recordLayout string

const (
	recordCurator recordLayout = "curator" // LayoutCurator's lock
	recordKazoo   recordLayout = "kazoo"   // LayoutKazoo's lock: a persistent directory
	recordLevels  recordLayout = "levels"  // a priority queue: one directory per level
)

// record is the record layout of a lock named by l.
func (l Layout) record() recordLayout {
	if l == LayoutKazoo {
		return recordKazoo
	}
	return recordCurator
}

// mismatch returns the first parameter of want that does not fit have.
func (want specRecord) mismatch(have specRecord) (field, had, wants string, bad bool) {
	switch {
	case have.Kind != want.Kind:
		return "kind", have.Kind, want.Kind, true
	case have.Leases != want.Leases:
		return "leases", fmt.Sprint(have.Leases), fmt.Sprint(want.Leases), true
	case have.Size != want.Size:
		return "size", fmt.Sprint(have.Size), fmt.Sprint(want.Size), true
	case want.Levels < have.Levels:
		return "priority levels", fmt.Sprint(have.Levels), fmt.Sprint(want.Levels), true
	case len(have.Priorities) > 0 && len(want.Priorities) > 0 &&
		!slices.Equal(want.Priorities[:min(len(have.Priorities), len(want.Priorities))], have.Priorities):
		return "priorities", fmt.Sprint(have.Priorities), fmt.Sprint(want.Priorities), true
	case have.Delivery != want.Delivery:
		return "delivery", have.Delivery, want.Delivery, true
	case have.Layout != want.Layout:
		return "layout", string(have.Layout), string(want.Layout), true
	case have.Partitions != want.Partitions:
		return "partitions", fmt.Sprint(have.Partitions), fmt.Sprint(want.Partitions), true
	}
	return "", "", "", false
}

// specChecks caches, per session, the directories whose record fits: the
// value is true when the record is exactly what the handle would write
// (specChecks.exact).
type specChecks struct{ ok sync.Map }

type specChecksKey struct{}

// specsOf returns the session's spec checks.
func specsOf(s *Session) *specChecks {
	return client.Shared(s, specChecksKey{}, func() *specChecks { return &specChecks{} })
}

// exact reports whether dir was found holding exactly the record its
// handle wants (its Released aside), or was created by this session with
// it: such a record may be written again with another Released (lock.go,
// the hand-off) without changing what it records.
func (c *specChecks) exact(dir string) bool {
	v, _ := c.ok.Load(dir)
	exact, _ := v.(bool)
	return exact
}

// guardSpec makes sure dir's record fits want, creating dir (and its
// missing parents, as containers) with want as its record when it does not
// exist. It is called before a handle first takes part in dir, and reads
// ZooKeeper once per directory and session.
func guardSpec(ctx context.Context, s *Session, dir string, acl []zk.ACL, want specRecord) error {
	return guardDir(ctx, s, dir, acl, want, true)
}

// checkSpec is guardSpec for a handle that creates nothing (a consumer): a
// missing directory passes, and is looked at again next time.
func checkSpec(ctx context.Context, s *Session, dir string, want specRecord) error {
	return guardDir(ctx, s, dir, nil, want, false)
}

func guardDir(ctx context.Context, s *Session, dir string, acl []zk.ACL, want specRecord, create bool) error {
	if _, ok := specsOf(s).ok.Load(dir); ok {
		return nil
	}
	want.Zkgen = 1
	for {
		data, _, err := opsOf(s).Get(ctx, dir)
		if errors.Is(err, zk.ErrNoNode) && !create {
			return nil
		}
		if errors.Is(err, zk.ErrNoNode) {
			created, err := createRecorded(ctx, s, dir, acl, want)
			if err != nil {
				return err
			}
			if !created {
				continue // created meanwhile by another process: read its record
			}
			specsOf(s).ok.Store(dir, true)
			return nil
		}
		if err != nil {
			return err
		}
		var have specRecord
		exact := false
		if len(data) > 0 && json.Unmarshal(data, &have) == nil && have.Zkgen > 0 {
			if field, had, wants, bad := want.mismatch(have); bad {
				return fmt.Errorf("%s: %w: the directory records %s %s, this handle has %s (a process generated from another version of the spec uses it)",
					dir, ErrSpecMismatch, field, had, wants)
			}
			exact = sameRecord(have, want)
		}
		if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && want.Kind == "semaphore" {
			return fmt.Errorf("%s: %w: the directory records kazoo's max_leases %d: a semaphore of layout kazoo, this handle has layout curator",
				dir, ErrSpecMismatch, n)
		}
		specsOf(s).ok.Store(dir, exact)
		return nil
	}
}

// sameRecord reports whether have, its Released aside, is want.
func sameRecord(have, want specRecord) bool {
	have.Released = ""
	a, errA := json.Marshal(have)
	b, errB := json.Marshal(want)
	return errA == nil && errB == nil && string(a) == string(b)
}

// createRecorded creates dir as a container holding rec, and its missing
// parents; it reports false when dir exists already.
func createRecorded(ctx context.Context, s *Session, dir string, acl []zk.ACL, rec specRecord) (bool, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return false, err
	}
	acl = opsOf(s).NodeACL(acl)
	if err := opsOf(s).Creatable(acl); err != nil {
		return false, client.OpError("create", dir, err)
	}
	if rec.Layout == recordKazoo {
		return createPersistent(ctx, s, dir, acl, data)
	}
	// Bottom-up: one create when the parent exists (see EnsureContainer).
	return opsOf(s).EnsureContainer(ctx, acl, dir, data)
}

// createPersistent creates dir as a persistent node with data (its parents
// as containers), reporting false when it exists. A directory kazoo's
// recipes share must not be a container: kazoo creates its path once per
// handle and counts on it staying, so a container the server reaps while
// empty fails kazoo's next create with NoNodeError.
func createPersistent(ctx context.Context, s *Session, dir string, acl []zk.ACL, data []byte) (bool, error) {
	if err := opsOf(s).EnsurePath(ctx, acl, path.Dir(dir)); err != nil {
		return false, err
	}
	// Not created: another process's, or a lost attempt's; the caller reads it.
	return opsOf(s).CreateIfAbsent(ctx, dir, data, 0, acl)
}
