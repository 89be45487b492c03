package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"go.opentelemetry.io/otel/metric"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// Sentinel errors of the election, tested with errors.Is.
var (
	// ErrNoLeader means an election has no acknowledged leader right now.
	ErrNoLeader = errors.New("election: no leader")
	// ErrLeadershipLost means a leadership ended without Resign: the
	// candidate node was deleted by someone else or the session ended.
	ErrLeadershipLost = client.EndError("election: leadership lost")
	// ErrNotLeader means Resign was called on a leadership already resigned.
	ErrNotLeader = errors.New("election: not leader")
)

// --- Election protocol
//
// The ZooKeeper guide's recipe. Each candidate creates an ephemeral
// sequential node, <dir>/_c_<uuid>-latch-<seq> (Curator's LeaderLatch
// names), carrying its encoded payload; the candidate with the lowest node
// leads; every other candidate watches only the node just before its own
// (waitFirst), so a leader's departure wakes one candidate.
//
// Leader acknowledgement (the guide's note): a candidate that finds itself
// first is not yet the leader. It becomes the leader by writing, in one
// ZooKeeper multi that also checks that its candidate node still exists
// (acknowledge):
//
//	<dir>/epoch   persistent; the election's epoch, decimal; +1 per leadership
//	<dir>/leader  ephemeral; {"epoch":N,"candidate":...,"session":...}\n<payload>
//
// So the acknowledgement exists only while its author's session does, the
// epoch grows with every new leadership (it is compare-and-set on the epoch
// node's version, in the same multi), and a candidate that has lost its
// node (its session expired) can never write one. An acknowledgement whose
// candidate node is gone while its session lives on is stale, and the next
// leader replaces it; one whose candidate is still there is waited for. The
// epoch node stays behind when everyone has left, so epochs keep growing
// across quiet periods. Both names sort after every latch node in Curator's
// ordering, so they never take part in its election, and neither matches
// kazoo's contender pattern (<hex>__lock__<seq>, LayoutKazoo), which kazoo's
// Election ignores everything else by. Resign deletes the
// acknowledgement and the candidate node in one multi (retire).

// Election is leader election on a znode directory. Campaign returns a
// Leadership only once this candidate is the acknowledged leader, whose
// epoch is greater than every earlier leadership's, and never to a
// candidate whose session has ended; at most one candidate is acknowledged
// at a time. Candidates wait herd-free: a leader's departure wakes one
// candidate. Candidate nodes are named as Curator's LeaderLatch names them
// (or, with WithLayout(LayoutKazoo), as kazoo's Election does) and carry
// the candidate's encoded payload, so Go and Curator (or kazoo) candidates
// can share one election. State, Leader and Observe read the acknowledged
// leader.
//
// An Election handle stands for one candidate: Campaign on a handle that is
// campaigning or leading returns ErrAlreadyHeld. After Resign it can campaign
// again. Methods are safe for concurrent use.
type Election[T any] struct {
	s     *Session
	dir   string
	err   error
	codec Codec[T]
	acl   []zk.ACL // of created nodes; empty: the session's default
	fam   *family  // candidate node names: curatorLatch or kazooMutex
	name  string   // WithResourceName

	busy slot // campaigning or leading
}

// Leadership is one tenure of an elected leader, held until Resign or until
// it is lost: its session expired or was closed, or its candidate node was
// deleted by someone else. Node is the candidate node; Lost and Context
// report the end of the leadership, and context.Cause wraps
// ErrLeadershipLost on loss, ErrNotHeld after Resign.
type Leadership[T any] struct {
	tenure
	e       *Election[T]
	epoch   int64
	payload T
}

// LeaderState is the acknowledged leader of an election as observed at one
// moment.
type LeaderState[T any] struct {
	// Elected is false when no leader is acknowledged (none elected yet, or
	// the last leader left and its successor has not acknowledged yet).
	Elected bool
	// Payload is the leader's payload (zero when !Elected, or when it could
	// not be decoded: see the log).
	Payload T
	// Epoch is the leader's epoch: it grows with every new leadership.
	Epoch int64
	// Candidate is the name of the leader's candidate node.
	Candidate string
	// Err is set by Observe only: it wraps ErrDecode when the leader's
	// acknowledgement or payload could not be decoded (the stream goes
	// on), and is ErrSessionExpired or ErrClosed on the last state before
	// the channel closes because the session ended.
	Err error
}

const (
	electionAck   = "leader"
	electionEpoch = "epoch"
)

// ackHeader is the first line of the leader acknowledgement node.
type ackHeader struct {
	Epoch     int64  `json:"epoch"`
	Candidate string `json:"candidate"`
	Session   string `json:"session"`
}

func encodeAck(h ackHeader, payload []byte) []byte {
	b, _ := json.Marshal(h)
	return append(append(b, '\n'), payload...)
}

func decodeAck(data []byte) (ackHeader, []byte, error) {
	var h ackHeader
	line, payload, ok := bytes.Cut(data, []byte{'\n'})
	if !ok {
		return h, nil, fmt.Errorf("%w: leader node has no header line", ErrDecode)
	}
	if err := json.Unmarshal(line, &h); err != nil {
		return h, nil, fmt.Errorf("%w: leader node header: %w", ErrDecode, err)
	}
	return h, payload, nil
}

// NewElection returns a candidate handle for the election at directory p,
// with payloads encoded by codec. It does no I/O; the directory and its
// parents are created (as container nodes) on first use. If p is invalid,
// every method returns p's error. opts: WithNodeACL, WithLayout
// (LayoutKazoo names candidate nodes <hex>__lock__<seq>, as kazoo's
// Election does, instead of Curator LeaderLatch's names).
func NewElection[T any](s *Session, p Path, codec Codec[T], opts ...HandleOption) *Election[T] {
	cfg := handleOptions(opts)
	fam := curatorLatch
	if cfg.layout == LayoutKazoo {
		fam = kazooMutex
	}
	return &Election[T]{s: s, dir: p.String(), err: p.Err(), codec: codec, acl: cfg.acl, fam: fam, name: cfg.name}
}

// Path returns the election's directory.
func (e *Election[T]) Path() string { return e.dir }

func (e *Election[T]) ackPath() string   { return joinPath(e.dir, electionAck) }
func (e *Election[T]) epochPath() string { return joinPath(e.dir, electionEpoch) }

// Campaign blocks until this candidate is the acknowledged leader — its
// acknowledgement, carrying payload and a new epoch, is written — and
// returns the leadership, held until Resign or until it is lost (see
// Leadership.Lost). It returns an error, never a leadership, if the session
// ends first (ErrSessionExpired, ErrClosed). When ctx ends first Campaign
// removes its candidate node (and its acknowledgement, if written) before
// returning ctx's error, so nothing of it is left in ZooKeeper.
func (e *Election[T]) Campaign(ctx context.Context, payload T) (*Leadership[T], error) {
	if e.err != nil {
		return nil, e.err
	}
	data, err := e.codec.Encode(payload)
	if err != nil {
		return nil, fmt.Errorf("election %s: encoding payload: %w", e.dir, err)
	}
	if !e.busy.take() {
		return nil, fmt.Errorf("election %s: %w", e.dir, ErrAlreadyHeld)
	}

	sp := telOf(e.s).begin(ctx, opCampaign, "election", e.name, e.dir)
	h, epoch, err := e.campaign(ctx, data)
	sp.acquired(h, err)
	if err != nil {
		e.busy.free()
		return nil, err
	}
	return &Leadership[T]{tenure: tenure{s: e.s, h: h}, e: e, epoch: epoch, payload: payload}, nil
}

func (e *Election[T]) campaign(ctx context.Context, data []byte) (*hold, int64, error) {
	// The first children read goes out with the create (pipeline.go).
	node, first, err := opsOf(e.s).CreateListed(ctx, e.acl, e.dir, e.fam.prefix(opsOf(e.s).Rand(), 0), data, false)
	if err != nil {
		return nil, 0, err
	}
	pre, err := e.waitFirst(ctx, node, first)
	if err != nil {
		return nil, 0, err
	}
	h, err := startHoldAs(ctx, e.s, node, 0, false, ErrLeadershipLost)
	if err != nil {
		return nil, 0, abandonNode(e.s, node, err)
	}
	epoch, err := e.acknowledge(ctx, h, data, pre)
	if err == nil {
		if err = e.s.Err(); err == nil {
			select {
			case <-h.lost:
				err = fmt.Errorf("election %s: %w", node, ErrLeadershipLost)
			default:
				telOf(e.s).failover(pre.wokeAt(), e.name, e.dir)
				return h, epoch, nil
			}
		}
	}
	e.withdraw(h)
	return nil, 0, err
}

// waitFirst blocks until the candidate node is the first of the election,
// watching only the candidate just before it; woken by the deletion of a
// candidate that was the first when it listed, it knows it is first
// without listing again. It returns the
// acknowledgement reads made with the children read that found it first,
// if it had to wait: they serve acknowledge's first attempt. first, if not
// nil, is a children read taken after the node was created (CreateListed):
// it serves as the first read.
func (e *Election[T]) waitFirst(ctx context.Context, node string, first *client.Result) (*ackReads, error) {
	name := baseName(node)
	for woke := false; ; woke = true {
		var kids []string
		var pre *ackReads
		var err error
		if first != nil {
			kids, first = first.Kids, nil
		} else if kids, pre, err = e.readCandidates(ctx, woke); err != nil {
			return nil, abandonNode(e.s, node, err)
		}
		p := e.fam.place(kids, name)
		before, found := p.blocker, p.found
		if !found {
			if err := e.s.Err(); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("election %s: candidate node deleted while waiting: %w", node, ErrLeadershipLost)
		}
		if before == "" {
			return pre, nil
		}
		// Watch only the candidate just before ours. If it is already
		// gone, read the children again (no lost wake-up).
		pred, err := opsOf(e.s).GetW(ctx, joinPath(e.dir, before))
		if client.IsNoNode(err) {
			continue
		}
		if err != nil {
			return nil, abandonNode(e.s, node, err)
		}
		select {
		case ev := <-pred.Watch:
			if ev.Type == zk.EventNodeDeleted && p.first {
				// The candidate before ours was the first: nothing comes
				// before it, ever after, so ours is first now, without a
				// listing (see the hand-off in lock.go). The
				// acknowledgement's multi checks that our node is still
				// there.
				pre := e.readAck(ctx)
				pre.woke = telOf(e.s).now()
				handOffsOf(e.s).Add(1)
				return &pre, nil
			}
		case <-ctx.Done():
			return nil, abandonNode(e.s, node, ctx.Err())
		case <-e.s.Done():
			return nil, e.s.Err()
		}
	}
}

// readCandidates lists the election's children. After a wake-up the
// candidate is likely the leader now, so it also reads the acknowledgement
// and the epoch, in the same round trip (pipelined).
func (e *Election[T]) readCandidates(ctx context.Context, woke bool) ([]string, *ackReads, error) {
	if !woke {
		kids, err := opsOf(e.s).Children(ctx, e.dir)
		return kids, nil, err
	}
	var kids []string
	var err error
	pre := &ackReads{}
	opsOf(e.s).Parallel(2, 2, func(i int) {
		if i == 0 {
			kids, err = opsOf(e.s).Children(ctx, e.dir)
		} else {
			*pre = e.readAck(ctx)
			pre.woke = telOf(e.s).now()
		}
	})
	return kids, pre, err
}

// withdraw stops the tenure h of a candidate that turned out not to lead
// and removes its node (and acknowledgement, if written).
func (e *Election[T]) withdraw(h *hold) {
	h.dismiss()
	if e.s.Err() != nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.Background(), client.CleanupTimeout)
	defer cancel()
	if rerr := e.retire(cctx, h.node); rerr != nil && !client.IsNoNode(rerr) {
		opsOf(e.s).Log().Warn("could not withdraw candidate", "path", h.node, "err", rerr)
	}
}

// acknowledge writes the leader acknowledgement of the candidate holding h
// and returns its epoch, in RetryUncertain: after a connection loss the
// next attempt's reads tell whether the lost multi went through. See
// Election for the layout.
// pre, if not nil, holds reads made after the children read that found the
// candidate first; they serve the first attempt.
func (e *Election[T]) acknowledge(ctx context.Context, h *hold, payload []byte, pre *ackReads) (int64, error) {
	var epoch int64
	err := opsOf(e.s).RetryUncertain(ctx, client.UncertainWrite{Op: "multi", Path: e.ackPath(),
		Attempt: func(int) (client.Outcome, error) {
			r := pre
			if r == nil {
				rr := e.readAck(ctx)
				r = &rr
			}
			pre = nil
			var o client.Outcome
			var err error
			epoch, o, err = e.ackOnce(ctx, h, payload, r)
			return o, err
		},
	})
	if err != nil {
		return 0, err
	}
	return epoch, nil
}

// ackOnce is one attempt of acknowledge, from the reads r: one multi that
// checks the candidate node, replaces a stale acknowledgement, moves the
// epoch on and creates the acknowledgement.
func (e *Election[T]) ackOnce(ctx context.Context, h *hold, payload []byte, r *ackReads) (int64, client.Outcome, error) {
	name := baseName(h.node)
	ackPath := e.ackPath()
	ops := []any{&zk.CheckVersionRequest{Path: h.node, Version: -1}}
	switch data, st, err := r.ack, r.ackStat, r.ackErr; {
	case err == nil:
		hd, _, derr := decodeAck(data)
		if derr == nil && hd.Candidate == name && st.EphemeralOwner == e.s.ID() {
			// An earlier attempt went through; its reply was lost. The
			// acknowledgement may be stale by now: if our candidate was
			// deleted under us (an operator, Reap), successors acknowledge
			// with higher epochs. Our candidate still there, read after
			// the acknowledgement, proves no successor came since.
			switch ok, err := e.s.Exists(ctx, h.node); {
			case err != nil:
				return 0, client.OutcomeKnown, err
			case !ok:
				return 0, client.OutcomeKnown, fmt.Errorf("election %s: candidate node gone after acknowledgement: %w", h.node, ErrLeadershipLost)
			}
			return hd.Epoch, client.OutcomeKnown, nil
		}
		if derr == nil && hd.Candidate != "" {
			gone, err := e.previousGone(ctx, hd.Candidate)
			if err != nil {
				return 0, client.OutcomeKnown, err
			}
			if !gone {
				return 0, client.OutcomeResend, nil
			}
		}
		ops = append(ops, &zk.DeleteRequest{Path: ackPath, Version: st.Version})
	case client.IsNoNode(err):
	default:
		return 0, client.OutcomeKnown, err
	}
	next, epochOp, err := e.nextEpoch(r)
	if err != nil {
		return 0, client.OutcomeKnown, err
	}
	hd := ackHeader{Epoch: next, Candidate: name, Session: fmt.Sprintf("0x%x", e.s.ID())}
	ops = append(ops, epochOp, &zk.CreateRequest{Path: ackPath, Data: encodeAck(hd, payload), Acl: opsOf(e.s).NodeACL(e.acl), Flags: zk.FlagEphemeral})
	res, err := opsOf(e.s).Multi(ctx, ops...)
	if err == nil {
		return next, client.OutcomeKnown, nil
	}
	switch i, opErr := client.FailedOp(res); {
	case i == 0 && client.IsNoNode(opErr):
		return 0, client.OutcomeKnown, fmt.Errorf("election %s: candidate node gone before acknowledgement: %w", h.node, ErrLeadershipLost)
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists), client.IsNoNode(err):
		return 0, client.OutcomeResend, nil // raced with another writer: read again
	}
	o, err := client.AfterSend("multi", ackPath, err)
	return 0, o, err
}

// previousGone handles the acknowledgement of a previous leader, candidate:
// if its node is gone (deleted under it while its session lives on) the
// acknowledgement is stale, and is replaced (gone true). If its node is
// still there, it is on its way out: previousGone waits for it and reports
// false, to read again.
func (e *Election[T]) previousGone(ctx context.Context, candidate string) (bool, error) {
	prev, err := opsOf(e.s).GetW(ctx, joinPath(e.dir, candidate))
	if client.IsNoNode(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	select {
	case <-prev.Watch:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-e.s.Done():
		return false, e.s.Err()
	}
}

// nextEpoch returns the epoch after the one read in r and the op that
// writes it (compare-and-set on the epoch node's version, or its creation).
func (e *Election[T]) nextEpoch(r *ackReads) (int64, any, error) {
	epochPath := e.epochPath()
	switch data, st, err := r.epoch, r.epochStat, r.epochErr; {
	case err == nil:
		cur, perr := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if perr != nil {
			return 0, nil, fmt.Errorf("election %s: epoch node holds %q: %w", epochPath, data, ErrDecode)
		}
		next := cur + 1
		return next, &zk.SetDataRequest{Path: epochPath, Data: []byte(strconv.FormatInt(next, 10)), Version: st.Version}, nil
	case client.IsNoNode(err):
		return 1, &zk.CreateRequest{Path: epochPath, Data: []byte("1"), Acl: opsOf(e.s).NodeACL(e.acl)}, nil
	default:
		return 0, nil, err
	}
}

// ackReads are the two reads an acknowledgement starts from.
type ackReads struct {
	ack, epoch         []byte
	ackStat, epochStat *zk.Stat
	ackErr, epochErr   error
	woke               time.Time // when read after a wake-up, with telemetry on
}

// readAck reads the acknowledgement and the epoch node concurrently.
func (e *Election[T]) readAck(ctx context.Context) ackReads {
	var r ackReads
	opsOf(e.s).Parallel(2, 2, func(i int) {
		if i == 0 {
			r.ack, r.ackStat, r.ackErr = opsOf(e.s).Get(ctx, e.ackPath())
		} else {
			r.epoch, r.epochStat, r.epochErr = opsOf(e.s).Get(ctx, e.epochPath())
		}
	})
	return r
}

// retire deletes candidate node and, atomically with it, its
// acknowledgement if it has one, in RetryUncertain. A node found gone after
// a connection loss counts as deleted (the lost attempt did it); found gone
// otherwise it returns ErrNoNode.
func (e *Election[T]) retire(ctx context.Context, node string) error {
	retried := false
	return opsOf(e.s).RetryUncertain(ctx, client.UncertainWrite{Op: "multi", Path: node,
		Attempt: func(int) (client.Outcome, error) {
			o, err := e.retireOnce(ctx, node, retried)
			if o == client.OutcomeHidden {
				retried = true
			}
			return o, err
		},
	})
}

// retireOnce is one attempt of retire; retried tells that an earlier one
// lost its reply.
func (e *Election[T]) retireOnce(ctx context.Context, node string, retried bool) (client.Outcome, error) {
	data, st, err := opsOf(e.s).Get(ctx, e.ackPath())
	if err != nil && !client.IsNoNode(err) {
		return client.OutcomeKnown, err
	}
	hd, _, derr := decodeAck(data)
	if err != nil || derr != nil || hd.Candidate != baseName(node) {
		err := opsOf(e.s).Delete(ctx, node, -1)
		if client.IsNoNode(err) && retried {
			return client.OutcomeKnown, nil
		}
		return client.OutcomeKnown, err
	}
	res, err := opsOf(e.s).Multi(ctx,
		&zk.DeleteRequest{Path: e.ackPath(), Version: st.Version},
		&zk.DeleteRequest{Path: node, Version: -1})
	if err == nil {
		return client.OutcomeKnown, nil
	}
	i, opErr := client.FailedOp(res)
	switch {
	case i == 1 && client.IsNoNode(opErr):
		// The candidate was deleted under us (an operator, Reap) but the
		// acknowledgement naming it is this session's: it goes too.
		if derr := opsOf(e.s).Delete(ctx, e.ackPath(), st.Version); derr != nil && !client.IsNoNode(derr) && !errors.Is(derr, zk.ErrBadVersion) {
			return client.OutcomeKnown, derr
		}
		if retried {
			return client.OutcomeKnown, nil
		}
		return client.OutcomeKnown, client.OpError("delete", node, opErr)
	case IsRecoverable(err):
		return client.OutcomeHidden, err
	case i == 0:
		return client.OutcomeResend, nil // the acknowledgement changed under us: read again
	}
	return client.OutcomeKnown, client.OpError("multi", node, err)
}

// Epoch returns the leadership's epoch, written in its acknowledgement:
// greater than the epoch of every earlier leadership of this election. Use
// it as a fencing token, registered with the store before the leader's
// work starts ([Lock.Token] says what a token guarantees and why).
func (l *Leadership[T]) Epoch() int64 { return l.epoch }

// Guarded runs ops (go-zookeeper's *zk.CreateRequest, *zk.SetDataRequest,
// *zk.DeleteRequest, *zk.CheckVersionRequest) as one ZooKeeper multi that
// also checks that this leadership's candidate node still exists: the
// writes happen only while it leads, atomically with that check, so a
// leader that was paused or cut off and replaced cannot write as leader.
// Errors as for Lock.Guarded, with ErrLeadershipLost for the loss (the
// candidate node gone, the session over, or over by its clock: nothing is
// sent then) and ErrNotHeld after Resign; ErrOutcomeUnknown when the reply
// was lost.
func (l *Leadership[T]) Guarded(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	return l.guardedOwn(ctx, "election", ops)
}

// Payload returns the payload this leader campaigned with.
func (l *Leadership[T]) Payload() T { return l.payload }

// Resign ends the leadership: the acknowledgement and the candidate node are
// deleted together (one multi), which wakes the next candidate. It returns
// ErrLeadershipLost if the leadership had been lost (nothing is left in
// ZooKeeper then either), ErrNotLeader on a second call. If the deletion is
// not confirmed — ctx ended, or it failed while the session lives — it
// carries on in the background (bounded) and Resign returns the error: a
// candidate node left on a live session would stall the election. Either
// way the Election handle can campaign again.
func (l *Leadership[T]) Resign(ctx context.Context) (err error) {
	if l.zero() {
		return errZeroValue
	}
	defer telOf(l.e.s).begin(ctx, opResign, "election", l.e.name, l.e.dir).end(&err)
	if !l.giveUp() {
		return fmt.Errorf("election %s: %w", l.e.dir, ErrNotLeader)
	}
	e := l.e
	defer e.busy.free()
	if l.h.wasLost.Load() && e.s.Err() == nil {
		e.dropAck(ctx, l.h.node)
	}
	return releaseHoldAs(ctx, e.s, l.h, "election", func(ctx context.Context) error { return e.retire(ctx, l.h.node) })
}

// dropAck deletes the acknowledgement if it still names node, a candidate
// deleted under this live session (by an operator, or Reap): the
// acknowledgement is this session's ephemeral, and would stay until the
// session ends when no successor replaces it. Not done within ctx (a
// connection loss, a short deadline), it carries on in the background,
// bounded, while the session lives — as a release does.
func (e *Election[T]) dropAck(ctx context.Context, node string) {
	if e.dropAckOnce(ctx, node) == nil || e.s.Err() != nil {
		return
	}
	opsOf(e.s).Spawn(func() {
		cctx, cancel := context.WithTimeout(context.Background(), client.CleanupTimeout)
		defer cancel()
		if err := e.dropAckOnce(cctx, node); err != nil && e.s.Err() == nil {
			opsOf(e.s).Log().Warn("could not remove the acknowledgement of a lost leadership", "path", e.ackPath(), "err", err)
		}
	})
}

func (e *Election[T]) dropAckOnce(ctx context.Context, node string) error {
	data, st, err := opsOf(e.s).Get(ctx, e.ackPath())
	switch {
	case client.IsNoNode(err):
		return nil
	case err != nil:
		return err
	}
	if hd, _, derr := decodeAck(data); derr != nil || hd.Candidate != baseName(node) || st.EphemeralOwner != e.s.ID() {
		return nil // another's, or nobody's to take away
	}
	if err := opsOf(e.s).Delete(ctx, e.ackPath(), st.Version); err != nil && !client.IsNoNode(err) && !errors.Is(err, zk.ErrBadVersion) {
		return err
	}
	return nil
}

// State reads the acknowledged leader. It does not block beyond the reads.
// An acknowledgement whose candidate node is gone (a leader deleted under a
// live session, before its successor took over) counts as no leader.
func (e *Election[T]) State(ctx context.Context) (LeaderState[T], error) {
	if e.err != nil {
		return LeaderState[T]{}, e.err
	}
	data, _, err := opsOf(e.s).Get(ctx, e.ackPath())
	if client.IsNoNode(err) {
		return LeaderState[T]{}, nil
	}
	if err != nil {
		return LeaderState[T]{}, err
	}
	return e.state(ctx, data)
}

func (e *Election[T]) state(ctx context.Context, data []byte) (LeaderState[T], error) {
	hd, payload, err := decodeAck(data)
	if err != nil {
		return LeaderState[T]{}, fmt.Errorf("election %s: %w", e.ackPath(), err)
	}
	if _, _, err := opsOf(e.s).Get(ctx, joinPath(e.dir, hd.Candidate)); client.IsNoNode(err) {
		return LeaderState[T]{}, nil
	} else if err != nil {
		return LeaderState[T]{}, err
	}
	st := LeaderState[T]{Elected: true, Epoch: hd.Epoch, Candidate: hd.Candidate}
	if st.Payload, err = e.codec.Decode(payload); err != nil {
		return st, fmt.Errorf("election %s: leader payload: %w", e.ackPath(), err)
	}
	return st, nil
}

// Leader returns the acknowledged leader's payload, or an error wrapping
// ErrNoLeader when there is none. It does not block beyond the reads.
func (e *Election[T]) Leader(ctx context.Context) (T, error) {
	st, err := e.State(ctx)
	if err == nil && !st.Elected {
		err = fmt.Errorf("election %s: %w", e.dir, ErrNoLeader)
	}
	return st.Payload, err
}

// Observe streams the acknowledged leader: the current state first, then
// every change — a new leader (higher epoch) or no leader (Elected false).
// It watches only the acknowledgement node, never the candidates. A
// consumer slower than the changes receives the newest state (states in
// between may be skipped; epochs show it), never a stale one last. An
// acknowledgement or payload that cannot be decoded is delivered with Err
// wrapping ErrDecode, and the stream goes on. The channel is closed when
// ctx or the session ends; when the session ends, the newest state is
// delivered once more with Err set to why (ErrSessionExpired or ErrClosed)
// before it closes. A handle that cannot work (a bad path) gives one state
// with Err set, then the close. An exists watch may remain registered on
// the server until the next change of the acknowledgement.
func (e *Election[T]) Observe(ctx context.Context) <-chan LeaderState[T] {
	if e.err != nil {
		return failedStream(ctx, LeaderState[T]{Err: e.err})
	}
	return stream(ctx, e.s, "election "+e.dir, func(ctx context.Context) (snapshot[LeaderState[T]], error) {
		r, ok, err := opsOf(e.s).GetOrExistsW(ctx, e.ackPath())
		if err != nil {
			return snapshot[LeaderState[T]]{}, err
		}
		snap := snapshot[LeaderState[T]]{key: "none", watch: r.Watch}
		if !ok {
			return snap, nil
		}
		st, err := e.state(ctx, r.Data)
		if err != nil && !errors.Is(err, ErrDecode) {
			return snapshot[LeaderState[T]]{}, err
		}
		if err != nil {
			opsOf(e.s).Log().Warn("election: undecodable leader acknowledgement", "path", e.ackPath(), "err", err)
			st.Err = err
		}
		snap.v = st
		if st.Elected {
			snap.key = fmt.Sprintf("%d/%s", st.Epoch, st.Candidate)
		}
		return snap, nil
	}, func(last LeaderState[T], err error) LeaderState[T] {
		last.Err = err
		return last
	})
}

// Candidate is one candidate node of an election.
type Candidate[T any] struct {
	Node    string    // full znode path
	Seq     int32     // sequence number
	Created time.Time // creation time (server clock)
	Payload T         // the candidate's payload
}

// Candidates returns the candidates in queue order: the first leads, or is
// about to (see State for the acknowledged leader). Candidates that leave
// while being read are left out; a missing directory gives none.
func (e *Election[T]) Candidates(ctx context.Context) ([]Candidate[T], error) {
	if e.err != nil {
		return nil, e.err
	}
	kids, err := opsOf(e.s).Children(ctx, e.dir)
	if client.IsNoNode(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Candidate[T]
	for _, c := range e.fam.sortContenders(kids) {
		p := joinPath(e.dir, c.name)
		data, st, err := opsOf(e.s).Get(ctx, p)
		if client.IsNoNode(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		v, err := e.codec.Decode(data)
		if err != nil {
			return nil, fmt.Errorf("election %s: candidate payload: %w", p, err)
		}
		out = append(out, Candidate[T]{Node: p, Seq: c.seq, Created: time.UnixMilli(st.Ctime).UTC(), Payload: v})
	}
	return out, nil
}

// Curator's LeaderLatch: _c_<uuid>-latch-<seq>.
var curatorLatch = &family{markers: []string{"latch-"}, blockedBy: [][]bool{{true}}}

// Run campaigns with payload and, each time it is elected, runs fn with a
// context that ends when the leadership is lost (or ctx ends); when fn
// returns it resigns and campaigns again (Curator's LeaderSelector with
// auto-requeue). It returns nil when ctx ends, the session's end
// (ErrSessionExpired, ErrClosed) when the session ends, and fn's error when
// fn fails while still leader (after resigning). A fn that returns nil, or
// fails because its leadership was lost, is followed by a new campaign.
func (e *Election[T]) Run(ctx context.Context, payload T, fn func(ctx context.Context, l *Leadership[T]) error) error {
	for {
		l, err := e.Campaign(ctx, payload)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		fctx, cancel := tenureCtx(ctx, l.Context())
		ferr := fn(fctx, l)
		cancel()
		lost := l.Context().Err() != nil
		rctx, rcancel := releaseCtx(ctx)
		rerr := l.Resign(rctx)
		rcancel()
		switch {
		case e.s.Err() != nil:
			return e.s.Err()
		case ctx.Err() != nil:
			return nil
		case ferr != nil && !lost:
			return client.JoinErrors(ferr, ignoreLost(rerr, ErrLeadershipLost))
		}
	}
}

// wokeAt is when the candidate whose acknowledgement reads r are woke and
// found itself first; zero when it did not wait (r nil) or telemetry is
// off.
func (r *ackReads) wokeAt() time.Time {
	if r == nil {
		return time.Time{}
	}
	return r.woke
}

// failover records an election's failover: from woke, when the new leader
// found its candidate first after a wake-up, to now. A zero woke (the
// candidate never waited) records nothing.
func (t *telemetry) failover(woke time.Time, name, path string) {
	if t == nil || woke.IsZero() {
		return
	}
	t.hists[histFailover].Record(context.Background(), time.Since(woke).Seconds(),
		metric.WithAttributes(resAttrs("election", name, path)...))
}
