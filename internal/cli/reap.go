package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkgen/zkgen/internal/inspect"
	"github.com/zkgen/zkgen/spec"
)

// reapLong is the command's help.
const reapLong = `Remove the contender nodes (holders and waiters; for semaphores, leases and
waiters) created more than --older-than ago, across every instance of every
lock, rwlock and semaphore the spec declares: HBase's reapExpiredLocks, to
break locks held by stuck processes whose sessions stay alive. A reaped
holder's Lost fires.

Without --yes nothing is removed: reap prints what it would remove. With
--yes it removes them and prints what it removed. Ages compare the server's
node creation times with this machine's clock, so allow for skew.

--resource NAME (repeatable) reaps only the resources named; --path PREFIX
only the nodes at or below that absolute znode path (/app/locks/orders/7 is
one instance, /app/locks/orders/7/_c_... one node). A node listed but gone
by the time reap deletes it (released, or its session ended) is reported as
"vanished".`

func (a *app) reapCommand() *cobra.Command {
	var f liveFlags
	var olderThan time.Duration
	var yes bool
	var resources []string
	var prefix string
	cmd := &cobra.Command{
		Use:   "reap",
		Short: "Break stale locks: remove lock, rwlock and semaphore nodes older than --older-than",
		Long:  reapLong,
		Example: `  zkgen reap --older-than 1h            # dry run: what would go
  zkgen reap --older-than 1h --yes      # remove them
  zkgen reap --older-than 10m --resource order_lock --path /app/locks/orders/7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := context.Background()
			s, sess, err := a.connect(ctx, &f)
			if err != nil {
				return err
			}
			defer sess.Close()
			if s, err = selectLocks(s, resources); err != nil {
				return err
			}
			if prefix != "" && !strings.HasPrefix(prefix, "/") {
				return userErrorf("--path %q: want an absolute znode path, like %s/locks", prefix, s.RootPath())
			}
			if err := checkRoot(ctx, sess, s, f.servers); err != nil {
				return err
			}
			rs, rerr := inspect.Reap(ctx, sess, s, inspect.ReapOptions{OlderThan: olderThan, Path: prefix, DryRun: !yes})
			if err := write(a.stdout, reapReport(rs, olderThan, yes)); err != nil {
				return err
			}
			if rerr != nil {
				return zkFailure("reap", rerr)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "remove nodes created longer ago than this (required)")
	cmd.Flags().StringArrayVar(&resources, "resource", nil, "reap only this lock, rwlock or semaphore (repeatable)")
	cmd.Flags().StringVar(&prefix, "path", "", "reap only nodes at or below this znode path")
	cmd.Flags().BoolVar(&yes, "yes", false, "remove the nodes (default: dry run)")
	_ = cmd.MarkFlagRequired("older-than")
	return cmd
}

// reapReport is what reap prints: a line per node, then the count (for
// a dry run, what would go).
func reapReport(rs []inspect.Reaped, olderThan time.Duration, yes bool) string {
	verb := "would remove"
	if yes {
		verb = "removed"
	}
	var b strings.Builder
	vanished := 0
	for _, r := range rs {
		b.WriteString(inspect.ReapLine(verb, r) + "\n")
		if r.Vanished {
			vanished++
		}
	}
	switch {
	case len(rs) == 0:
		fmt.Fprintf(&b, "no lock node older than %v\n", olderThan)
	case !yes:
		fmt.Fprintf(&b, "%d node(s) older than %v; run again with --yes to remove them\n", len(rs), olderThan)
	case vanished > 0:
		fmt.Fprintf(&b, "%d node(s) removed, %d vanished before reap could remove them\n", len(rs)-vanished, vanished)
	default:
		fmt.Fprintf(&b, "%d node(s) removed\n", len(rs))
	}
	return b.String()
}

// selectLocks narrows s to the resources named (all when none), which must
// be of the kinds reap breaks.
func selectLocks(s *spec.Spec, names []string) (*spec.Spec, error) {
	sel, err := inspect.Select(s, names)
	if err != nil {
		return nil, userErrorf("--resource: %v", err)
	}
	if len(names) == 0 {
		return sel, nil
	}
	for _, r := range sel.Resources {
		switch r.Kind {
		case spec.KindLock, spec.KindRWLock, spec.KindSemaphore:
		default:
			return nil, userErrorf("--resource %s: a %s; reap breaks only lock, rwlock and semaphore nodes", r.Name, r.Kind)
		}
	}
	return sel, nil
}
