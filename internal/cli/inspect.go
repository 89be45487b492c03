package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/zkgen/zkgen/internal/inspect"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// clearScreen moves the cursor home and clears the terminal (ANSI).
const clearScreen = "\x1b[H\x1b[2J"

// isTerminal reports whether w is a terminal (a file whose descriptor is
// one), the only place --watch writes escape codes to.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// inspectLong is the command's help.
const inspectLong = `Connect to ZooKeeper and show the live state of every resource the spec
declares: lock and rwlock holders and waiters in queue order with their
owner (host, pid, purpose) and how long they have held or waited, semaphore
leases and waiters, queue depths (per priority) and the oldest item's age,
barriers up or down, double-barrier participants, the acknowledged election
leader (epoch, payload) and the candidates, group members, config values and
versions, counters, and two-phase commit transactions with their votes and
decision. Path parameters are expanded by listing the tree: one line per
existing instance (an int parameter matches only integer children); a
resource none of whose instances exists is listed as "no instances".
--resource NAME (repeatable) shows only the resources named.

When the spec's root does not exist on the servers, inspect says so and
exits 1: the servers are not the ones the spec runs on, or nothing has run
there yet.

Ages compare the server's node creation times with this machine's clock.
Payloads are shown as JSON when they are JSON, as quoted text when they are
printable, else as base64.

--json prints the snapshot as a JSON document (docs/operating.md shows its
structure). --watch refreshes the table every interval (default 2s; give
another as --watch=5s) until interrupted: in place on a terminal; written to
a file or a pipe, each table follows the last, without escape codes. An
outage does not end it: when ZooKeeper does not answer within --timeout or
the session ends, the frame says so (with the last table seen) and inspect
carries on with a new session once ZooKeeper answers; with --json the
outage goes to standard error.

Without --watch, an unreachable server is exit status 1 after --timeout.`

func (a *app) inspectCommand() *cobra.Command {
	var f liveFlags
	var asJSON bool
	var watch time.Duration
	var resources []string
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Show the live state of every declared resource",
		Long:  inspectLong,
		Example: `  zkgen inspect --servers zk1:2181,zk2:2181
  zkgen inspect --json | jq '.resources[] | select(.kind == "lock")'
  zkgen inspect --watch=1s --auth ops:secret`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			s, dial, err := a.live(&f, runtime.WithReadOnly())
			if err != nil {
				return err
			}
			if s, err = inspect.Select(s, resources); err != nil {
				return userErrorf("--resource: %v", err)
			}
			v := &viewer{a: a, f: &f, s: s, dial: dial, json: asJSON, every: watch, tty: isTerminal(a.stdout)}
			if watch <= 0 {
				return v.once(ctx)
			}
			return v.watch(ctx)
		},
	}
	f.register(cmd)
	cmd.Flags().StringArrayVar(&resources, "resource", nil, "show only this resource (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON document instead of the table")
	cmd.Flags().DurationVar(&watch, "watch", 0, "refresh every interval until interrupted (--watch alone: 2s)")
	cmd.Flags().Lookup("watch").NoOptDefVal = "2s"
	return cmd
}

// viewer shows the snapshots of inspect: once, or every interval (--watch)
// across outages and sessions.
type viewer struct {
	a     *app
	f     *liveFlags
	s     *spec.Spec
	dial  dialFunc
	json  bool
	every time.Duration // --watch; 0: once
	tty   bool
	sess  *runtime.Session
	mir   *inspect.Mirror // --watch: followed on sess across frames
	stop  func()          // ends mir's run

	frames   int
	rootOK   bool      // the spec's root was found once
	down     time.Time // when the outage began; zero while ZooKeeper answers
	last     string    // the last table shown, for an outage frame
	lastSeen time.Time // when it was taken
}

// once shows one snapshot: every failure ends the command.
func (v *viewer) once(ctx context.Context) error {
	sess, err := v.dial(ctx)
	if err != nil {
		return err
	}
	defer sess.Close()
	if err := checkRoot(ctx, sess, v.s, v.f.servers); err != nil {
		return err
	}
	snap, err := inspect.Gather(ctx, sess, v.s)
	if err != nil {
		return zkFailure("inspect", err)
	}
	out, err := v.render(snap)
	if err != nil {
		return err
	}
	return write(v.a.stdout, out)
}

// watch shows a snapshot every interval until ctx ends (Ctrl-C: success).
// ZooKeeper not answering, or the session ending, is an outage, not a
// failure: it is shown (with the last table seen), and inspect carries on
// with a new session once ZooKeeper answers. Only a missing root ends it,
// as it does without --watch.
func (v *viewer) watch(ctx context.Context) error {
	defer v.closeSession()
	for ctx.Err() == nil {
		err := v.frame(ctx)
		var fe fatal
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
		case errors.As(err, &fe):
			return fe.err
		default:
			if err := v.outage(err); err != nil {
				return err
			}
		}
		t := time.NewTimer(v.every)
		var ended <-chan struct{}
		if v.sess != nil {
			ended = v.sess.Done() // a session's end is shown at once
		}
		select {
		case <-ctx.Done():
		case <-ended:
		case <-t.C:
		}
		t.Stop()
	}
	return nil
}

// fatal is an error of a frame that ends --watch: no reconnection mends
// it (the spec's root missing, inspect's own output failing).
type fatal struct{ err error }

func (f fatal) Error() string { return f.err.Error() }

// frame opens a session if there is none (or it ended), takes a snapshot
// within --timeout and shows it.
func (v *viewer) frame(ctx context.Context) error {
	if v.sess != nil && v.sess.Err() != nil {
		v.closeSession()
	}
	if v.sess == nil {
		sess, err := v.dial(ctx)
		if err != nil {
			return err
		}
		mir, stop, err := inspect.Follow(ctx, sess, v.s)
		if err != nil {
			sess.Close()
			return fatal{err}
		}
		v.sess, v.mir, v.stop = sess, mir, stop
	}
	if !v.rootOK {
		err := inspect.CheckRoot(ctx, v.sess, v.s)
		if errors.Is(err, inspect.ErrRootMissing) {
			return fatal{rootFailure(err, v.s, v.f.servers)}
		}
		if err != nil {
			return err
		}
		v.rootOK = true
	}
	gctx, cancel := context.WithTimeout(ctx, v.f.timeout)
	defer cancel()
	snap, err := inspect.GatherFrom(gctx, v.sess, v.mir, v.s)
	if err != nil {
		if v.sess.Err() != nil {
			err = fmt.Errorf("session ended: %w", v.sess.Err())
		} else if gctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("no answer within %v", v.f.timeout)
		}
		return err
	}
	out, err := v.render(snap)
	if err != nil {
		return fatal{err}
	}
	if !v.down.IsZero() && v.json {
		fmt.Fprintf(v.a.stderr, "zkgen: inspect: ZooKeeper back after %v, session 0x%x\n", time.Since(v.down).Round(time.Second), v.sess.ID())
	}
	v.down, v.last, v.lastSeen = time.Time{}, out, snap.Taken
	if err := write(v.a.stdout, v.header(snap.Taken, "")+out); err != nil {
		return fatal{err}
	}
	return nil
}

// closeSession ends the mirror's run and the session, if there is one.
func (v *viewer) closeSession() {
	if v.sess == nil {
		return
	}
	v.stop()
	v.sess.Close()
	v.sess, v.mir, v.stop = nil, nil, nil
}

// outage shows that ZooKeeper does not answer: on stdout for the table (the
// header says since when, then the last table seen), on stderr once per
// outage for --json (whose stdout stays one snapshot per document).
func (v *viewer) outage(err error) error {
	now := time.Now()
	first := v.down.IsZero()
	if first {
		v.down = now
	}
	why := strings.TrimPrefix(err.Error(), "zkgen: ")
	msg := fmt.Sprintf("ZooKeeper unreachable since %s (%v): %s; retrying every %v",
		v.down.Format(time.TimeOnly), now.Sub(v.down).Round(time.Second), why, v.every)
	if v.json {
		if first {
			fmt.Fprintln(v.a.stderr, "zkgen: inspect: "+msg)
		}
		return nil
	}
	body := msg + "\n"
	if v.last != "" {
		body += "\nLast seen at " + v.lastSeen.Format(time.TimeOnly) + " (stale):\n\n" + v.last
	}
	return write(v.a.stdout, v.header(now, "OUTAGE  ")+body)
}

// header starts a frame of --watch: the screen cleared on a terminal, a
// blank line between frames elsewhere, and a title line.
func (v *viewer) header(at time.Time, mark string) string {
	if v.json {
		return ""
	}
	var buf bytes.Buffer
	if v.tty {
		buf.WriteString(clearScreen)
	} else if v.frames > 0 {
		buf.WriteString("\n")
	}
	v.frames++
	buf.WriteString("zkgen inspect " + v.f.servers + "  " + mark + at.Format(time.TimeOnly) + "  (every " + v.every.String() + ", Ctrl-C to stop)\n\n")
	return buf.String()
}

// render renders a snapshot as the table or as JSON.
func (v *viewer) render(snap *inspect.Snapshot) (string, error) {
	var buf bytes.Buffer
	var err error
	if v.json {
		err = inspect.JSON(&buf, snap)
	} else {
		err = inspect.Text(&buf, snap)
	}
	if err != nil {
		return "", internalErrorf("render: %v", err)
	}
	return buf.String(), nil
}
