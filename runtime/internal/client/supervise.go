package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Supervise's guarantees across a change of session (one session at a
// time, one run of the work at a time, tenures lost before the work's
// context ends, nothing adopted) are stated once, in the public doc of
// runtime.Supervise; retire.go closes a given-up session on the server
// before the next one opens.

// SessionEvent describes a session opened by Supervise.
type SessionEvent struct {
	// Generation counts the sessions of one Supervise call, from 1.
	Generation int
	// ID is the new session's id.
	ID int64
	// PrevID is the previous session's id (0 for the first).
	PrevID int64
	// PrevErr is why the previous session ended: ErrSessionExpired or
	// ErrClosed (nil for the first).
	PrevErr error
}

// WithSessionEvents makes Supervise call fn each time it has opened a
// session, before it runs the work on it. fn must not block. Connect
// ignores it.
func WithSessionEvents(fn func(SessionEvent)) Option {
	return func(s *Session) { s.onSupervised = fn }
}

// withLearned makes the session try servers besides those given to
// Connect: those an earlier session of Supervise learned from the
// ensemble's configuration, so that a service whose servers were all
// replaced under its session opens the next one on the new servers. Host
// names among them need not resolve (see hostList.Init).
func withLearned(servers []string) Option {
	return func(s *Session) { s.learned = servers }
}

// SuperviseBackoff paces the connection attempts while ZooKeeper is
// unreachable, and the delay before a session replaces another.
var SuperviseBackoff = RetryPolicy{Initial: 100 * time.Millisecond, Max: 10 * time.Second}

// connectAttempt bounds one connection attempt of Supervise.
const connectAttempt = 5 * time.Second

// Supervise runs fn on a ZooKeeper session for as long as ctx lasts. It
// connects to servers (retrying with capped, jittered backoff while they are
// unreachable) and calls fn with the session and a context that is
// cancelled, with cause ErrSessionExpired or ErrClosed, when the session
// ends. Once fn has returned, it opens a new session and calls fn again.
//
// It returns nil when ctx ends (after cancelling fn's context and waiting
// for fn) or when fn returns nil while its session lives: the work is done.
// It returns fn's error when fn fails for another reason than the end of its
// session — an error a session's end makes recipes report (ErrLockLost,
// context.Canceled, ...) counts as the session's end once the session is
// seen to end within 2/3 of its timeout, since a tenure's loss can be told
// before the end of the session it comes from — and an ErrTLSHandshake error when a connection fails over TLS
// (WithTLS) before a session is established: a certificate problem that
// retrying does not mend. opts are Connect's (WithTLS, WithDialer, ...),
// plus WithSessionEvents. Each new session tries the servers given to
// Supervise and those its predecessor took from the ensemble's
// configuration (see WithEnsembleConfig), so that a service whose servers
// were all replaced opens its next session on the new ones.
//
// Each new session is logged (at info) and reported to WithSessionEvents.
// Its guarantees are runtime.Supervise's public doc.
func Supervise(ctx context.Context, servers []string, fn func(ctx context.Context, s *Session) error, opts ...Option) error {
	probe := Session{log: slog.Default()}
	for _, o := range opts {
		o(&probe)
	}
	var prev *Session
	for gen := 1; ; gen++ {
		s, err := superviseConnect(ctx, servers, prev, &probe, opts)
		if errors.Is(err, ErrTLSHandshake) {
			return err
		}
		if err != nil {
			return nil // ctx ended
		}
		ev := SessionEvent{Generation: gen, ID: s.ID()}
		if prev != nil {
			ev.PrevID, ev.PrevErr = prev.ID(), prev.Err()
		}
		s.log.Info("zookeeper session started", "generation", gen, "session", fmt.Sprintf("0x%x", ev.ID),
			"previous", fmt.Sprintf("0x%x", ev.PrevID), "previous_end", ev.PrevErr)
		if probe.onSupervised != nil {
			probe.onSupervised(ev)
		}
		done, err := superviseRun(ctx, s, fn)
		if done {
			return err
		}
		prev = s
	}
}

// superviseRun runs fn on s until s ends, ctx ends or fn returns. done
// reports that Supervise must return err.
func superviseRun(ctx context.Context, s *Session, fn func(context.Context, *Session) error) (done bool, err error) {
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ret := make(chan error, 1)
	go func() { ret <- fn(fctx, s) }()
	select {
	case err = <-ret:
		ended := awaitFate(s, err)
		s.Close()
		s.tenures.Wait()
		switch {
		case ctx.Err() != nil:
			return true, nil
		case !ended && err == nil:
			return true, nil // the work is done
		case sessionEnd(err, ended):
			return false, nil
		}
		return true, err
	case <-s.Done():
		s.tenures.Wait() // every tenure has told its loss
		cancel(s.Err())
		err = <-ret
		if ctx.Err() != nil {
			return true, nil
		}
		if sessionEnd(err, true) {
			return false, nil
		}
		return true, err
	case <-ctx.Done():
		cancel(ctx.Err())
		<-ret
		s.Close()
		s.tenures.Wait()
		return true, nil
	}
}

// awaitFate reports whether the session has ended, once fn returned err.
// A tenure's loss can be told before the end of the session it comes from:
// the server deletes an expired session's ephemeral nodes, firing their
// watches, before it closes the session's connection, and a process that
// resumes from a pause reads those events before the connection's end. So
// when err is what a session's end makes recipes report and the end is not
// known yet, it asks the session's clock and waits for the session's fate,
// up to the time that clock takes to give up a silent connection (2/3 of
// the timeout): a loss whose session lives on (a node deleted by someone
// else) is fn's failure, returned after that wait.
func awaitFate(s *Session, err error) bool {
	if s.Err() != nil || OpsOf(s).CheckClock() {
		return true
	}
	if err == nil || !sessionEnd(err, true) {
		return false
	}
	t := time.NewTimer(OpsOf(s).Timeout() * 2 / 3)
	defer t.Stop()
	select {
	case <-s.Done():
		return true
	case <-t.C:
		return OpsOf(s).CheckClock()
	}
}

// sessionEnd reports whether fn's error is the end of its session (ended:
// the session had ended when fn returned) rather than a failure of its own.
func sessionEnd(err error, ended bool) bool {
	if errors.Is(err, ErrSessionExpired) || errors.Is(err, ErrClosed) {
		return true
	}
	if !ended {
		return false
	}
	// What the session's end makes recipes and contexts report.
	var ee *endError
	return err == nil || errors.Is(err, context.Canceled) || errors.As(err, &ee)
}

// EndError returns a new sentinel error with text, for what a recipe's
// handles report because their session ended: a tenure lost with it (a
// lock, a leadership), a write whose outcome its end hid. Supervise counts
// such an error, returned once the session has ended, as the session's end
// rather than the work's failure. Each call returns a distinct error, to be
// tested with errors.Is.
func EndError(text string) error { return &endError{text} }

// endError is an EndError.
type endError struct{ text string }

func (e *endError) Error() string { return e.text }

// superviseConnect opens the next session: it waits until the previous one
// is surely over on the server, then connects, retrying with backoff. It
// fails only when ctx ends, or with ErrTLSHandshake. probe holds opts'
// settings: the logger, and the source of the pauses' jitter.
func superviseConnect(ctx context.Context, servers []string, prev, probe *Session, opts []Option) (*Session, error) {
	log := probe.log
	if prev != nil {
		if err := awaitOver(ctx, servers, prev, log); err != nil {
			return nil, err
		}
		// A short random wait too, so that a fleet whose sessions ended
		// together (an ensemble outage) does not come back at once.
		jitter := time.Duration(probe.rand.Int64N(int64(SuperviseBackoff.Initial) * 5))
		if err := SleepCtx(ctx, jitter); err != nil {
			return nil, err
		}
	}
	if prev != nil {
		opts = append(slices.Clip(opts), withLearned(prev.hosts.learnedServers()))
	}
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, connectAttempt)
		s, err := Connect(actx, servers, opts...)
		cancel()
		if err == nil {
			return s, nil
		}
		if errors.Is(err, ErrTLSHandshake) {
			return nil, err // retrying does not help
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		d := SuperviseBackoff.delay(attempt, probe.rand, uint64(attempt))
		log.Warn("zookeeper unreachable; retrying", "attempt", attempt, "in", d, "err", err)
		if err := SleepCtx(ctx, d); err != nil {
			return nil, err
		}
	}
}

// awaitOver returns once prev is over on the server (see retire.go): at
// once when the server expired it; otherwise once a server closed it (or
// said it has expired), trying again with backoff while none can be
// reached. Only when it cannot be closed so does it wait out its timeout
// (overBy). It fails only when ctx ends.
func awaitOver(ctx context.Context, servers []string, prev *Session, log *slog.Logger) error {
	if !mustRetire(prev) {
		return nil
	}
	id := fmt.Sprintf("0x%x", prev.ID())
	for attempt := 1; ; attempt++ {
		err := retire(ctx, servers, prev)
		switch {
		case err == nil:
			log.Debug("previous zookeeper session over on the server", "session", id)
			return nil
		case errors.Is(err, errCannotRetire):
			log.Warn("waiting out the previous session's timeout", "session", id, "err", err)
			return SleepCtx(ctx, time.Until(overBy(prev)))
		case ctx.Err() != nil:
			return ctx.Err()
		}
		d := SuperviseBackoff.delay(attempt, prev.rand, uint64(attempt))
		log.Warn("could not close the previous session yet; retrying", "session", id, "attempt", attempt, "in", d, "err", err)
		if err := SleepCtx(ctx, d); err != nil {
			return err
		}
	}
}

// overBy returns when the ended session is surely over on the server too.
// One the client gave up on by its own clock lives on in the server until
// the timeout after the server last heard from it (which is no later than
// when the client last heard from the server), rounded up to the server's
// tick, which is at most half the timeout (the server grants no timeout
// under two ticks); the margin covers the closing of the session.
func overBy(s *Session) time.Time {
	if !s.gaveUp.Load() {
		return time.Time{}
	}
	last := time.Unix(0, s.lastRecv.Load())
	timeout := OpsOf(s).Timeout()
	return last.Add(timeout + timeout/2 + 100*time.Millisecond)
}

// SleepCtx waits d, or returns ctx's error when it ends first.
func SleepCtx(ctx context.Context, d time.Duration) error {
	if d > 0 && !pause(ctx, d, nil) {
		return ctx.Err()
	}
	return ctx.Err()
}
