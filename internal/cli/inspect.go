package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/zkgen/zkgen/internal/inspect"
)

// clearScreen moves the cursor home and clears the terminal (ANSI).
const clearScreen = "\x1b[H\x1b[2J"

// isTerminal reports whether w is a terminal (a file whose descriptor is
// one), the only place --watch writes escape codes to.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

func (a *app) inspectCommand() *cobra.Command {
	var f liveFlags
	var asJSON bool
	var watch time.Duration
	var resources []string
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Show the live state of every declared resource",
		Long: `Connect to ZooKeeper and show the live state of every resource the spec
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

--json prints the snapshot as a JSON document (see the README for its
structure). --watch refreshes the table every interval (default 2s; give
another as --watch=5s) until interrupted: in place on a terminal; written to
a file or a pipe, each table follows the last, without escape codes.

An unreachable server is exit status 1 after --timeout.`,
		Example: `  zkgen inspect --servers zk1:2181,zk2:2181
  zkgen inspect --json | jq '.resources[] | select(.kind == "lock")'
  zkgen inspect --watch=1s --auth ops:secret`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			s, sess, err := a.connect(ctx, &f)
			if err != nil {
				return err
			}
			defer sess.Close()
			if s, err = inspect.Select(s, resources); err != nil {
				return userErrorf("--resource: %v", err)
			}
			if err := checkRoot(ctx, sess, s, f.servers); err != nil {
				return err
			}
			tty, frames := isTerminal(a.stdout), 0
			for {
				snap, err := inspect.Gather(ctx, sess, s)
				if err != nil {
					if ctx.Err() != nil && watch > 0 {
						return nil // interrupted
					}
					return zkFailure("inspect", err)
				}
				var buf bytes.Buffer
				if watch > 0 && !asJSON {
					// Redraw in place on a terminal; a file or a pipe gets
					// the frames one after the other, without escape codes.
					if tty {
						buf.WriteString(clearScreen)
					} else if frames > 0 {
						buf.WriteString("\n")
					}
					frames++
					buf.WriteString("zkgen inspect " + f.servers + "  " + snap.Taken.Format(time.TimeOnly) + "  (every " + watch.String() + ", Ctrl-C to stop)\n\n")
				}
				if asJSON {
					err = inspect.JSON(&buf, snap)
				} else {
					err = inspect.Text(&buf, snap)
				}
				if err != nil {
					return internalErrorf("render: %v", err)
				}
				if err := write(a.stdout, buf.String()); err != nil {
					return err
				}
				if watch <= 0 {
					return nil
				}
				t := time.NewTimer(watch)
				select {
				case <-ctx.Done():
					t.Stop()
					return nil
				case <-sess.Done():
					t.Stop()
					return zkFailure("inspect", sess.Err())
				case <-t.C:
				}
			}
		},
	}
	f.register(cmd)
	cmd.Flags().StringArrayVar(&resources, "resource", nil, "show only this resource (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON document instead of the table")
	cmd.Flags().DurationVar(&watch, "watch", 0, "refresh every interval until interrupted (--watch alone: 2s)")
	cmd.Flags().Lookup("watch").NoOptDefVal = "2s"
	return cmd
}
