package runtime

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// Claim is an item of an at-least-once queue that a consumer holds now:
// delivered by a Take (or to Consume's function), not yet acked, released
// or given back. It is held for as long as its consumer's session lives.
type Claim struct {
	Item    string    // the item's znode path
	Session int64     // the consumer's ZooKeeper session: the claim node's ephemeral owner
	Since   time.Time // when the consumer claimed it (server clock)
	// Attempt is the delivery's Attempt (see Delivery.Attempt), 0 when
	// the item was acked or moved meanwhile.
	Attempt int
}

// Claims lists the items claimed now, the longest held first. It only
// reads (a listing, then two or three reads a claim, in parallel) and
// writes nothing; it does not block beyond those reads, and when ctx ends
// it returns ctx's error. A claim that goes while it is being read is not
// listed.
func (q *AckQueue[T]) Claims(ctx context.Context) ([]Claim, error) { return q.q.claims(ctx) }

// Claims lists the items claimed now, of every priority; see
// AckQueue.Claims.
func (q *AckPriorityQueue[T]) Claims(ctx context.Context) ([]Claim, error) {
	return q.q.claims(ctx)
}

// Claims lists the items claimed now; see AckQueue.Claims.
func (q *AckDelayQueue[T]) Claims(ctx context.Context) ([]Claim, error) { return q.q.claims(ctx) }

// claims lists every level's claims, the longest held first.
func (pq *prioQueue[T]) claims(ctx context.Context) (_ []Claim, err error) {
	defer pq.telOp(ctx, opClaims).end(&err)
	if pq.err != nil {
		return nil, pq.err
	}
	var out []Claim
	for _, lq := range pq.lvl {
		cs, err := lq.claims(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	sortClaims(out)
	return out, nil
}

// claims lists the item claims under <dir>/claims (a spread or prefetching
// consumer's chunk claims are not items) and reads each claim's stat, its
// attempts node's and, when the item was delivered before, the item's
// (Attempt discounts its give-backs: see claimFound).
func (q *queue[T]) claims(ctx context.Context) (_ []Claim, err error) {
	defer q.telOp(ctx, opClaims, false).end(&err)
	if q.err != nil {
		return nil, q.err
	}
	dir := joinPath(q.dir, claimsDir)
	kids, err := opsOf(q.s).Children(ctx, dir)
	if client.IsNoNode(err) {
		kids, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	kids = slices.DeleteFunc(kids, func(k string) bool { return !strings.Contains(k, "."+itemPrefix) })
	found := make([]Claim, len(kids))
	errs := make([]error, len(kids))
	opsOf(q.s).Parallel(len(kids), 32, func(i int) {
		found[i], errs[i] = q.claimFound(ctx, kids[i])
	})
	var out []Claim
	for i, c := range found {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if c.Item != "" {
			out = append(out, c)
		}
	}
	sortClaims(out)
	return out, nil
}

// claimFound reads the claim named name (<bucket>.<item>); a zero Claim
// when it is gone. Attempt is the attempts node's count less the item's
// give-backs (its data version), as the claimer's Delivery counts it.
func (q *queue[T]) claimFound(ctx context.Context, name string) (Claim, error) {
	_, st, err := opsOf(q.s).Get(ctx, joinPath(joinPath(q.dir, claimsDir), name))
	if client.IsNoNode(err) {
		return Claim{}, nil
	}
	if err != nil {
		return Claim{}, err
	}
	c := Claim{Item: joinPath(q.dir, strings.Replace(name, ".", "/", 1)), Session: st.EphemeralOwner,
		Since: time.UnixMilli(st.Ctime).UTC()}
	_, ast, err := opsOf(q.s).Get(ctx, joinPath(joinPath(q.dir, attemptsDir), name))
	switch {
	case client.IsNoNode(err):
		return c, nil // acked or moved since the claim was read
	case err != nil:
		return Claim{}, err
	case ast.Version == 0:
		c.Attempt = 1 // the first delivery: no give-back to discount
		return c, nil
	}
	_, ist, err := opsOf(q.s).Get(ctx, c.Item)
	switch {
	case client.IsNoNode(err):
		return c, nil
	case err != nil:
		return Claim{}, err
	}
	c.Attempt = max(int(ast.Version)+1-int(ist.Version), 1)
	return c, nil
}

// sortClaims orders claims the longest held first, then by item.
func sortClaims(cs []Claim) {
	slices.SortFunc(cs, func(a, b Claim) int {
		return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Item, b.Item))
	})
}
