package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkgen/zkgen/internal/inspect"
)

func (a *app) reapCommand() *cobra.Command {
	var f liveFlags
	var olderThan time.Duration
	var yes bool
	cmd := &cobra.Command{
		Use:   "reap",
		Short: "Break stale locks: remove lock, rwlock and semaphore nodes older than --older-than",
		Long: `Remove the contender nodes (holders and waiters; for semaphores, leases and
waiters) created more than --older-than ago, across every instance of every
lock, rwlock and semaphore the spec declares: HBase's reapExpiredLocks, to
break locks held by stuck processes whose sessions stay alive. A reaped
holder's Lost fires.

Without --yes nothing is removed: reap prints what it would remove. With
--yes it removes them and prints what it removed. Ages compare the server's
node creation times with this machine's clock, so allow for skew.`,
		Example: `  zkgen reap --older-than 1h            # dry run: what would go
  zkgen reap --older-than 1h --yes      # remove them`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := context.Background()
			s, sess, err := a.connect(ctx, &f)
			if err != nil {
				return err
			}
			defer sess.Close()
			if err := checkRoot(ctx, sess, s, f.servers); err != nil {
				return err
			}
			rs, rerr := inspect.Reap(ctx, sess, s, olderThan, !yes)
			verb := "would remove"
			if yes {
				verb = "removed"
			}
			var b strings.Builder
			for _, r := range rs {
				b.WriteString(inspect.ReapLine(verb, r) + "\n")
			}
			switch {
			case len(rs) == 0:
				fmt.Fprintf(&b, "no lock node older than %v\n", olderThan)
			case !yes:
				fmt.Fprintf(&b, "%d node(s) older than %v; run again with --yes to remove them\n", len(rs), olderThan)
			default:
				fmt.Fprintf(&b, "%d node(s) removed\n", len(rs))
			}
			if err := write(a.stdout, b.String()); err != nil {
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
	cmd.Flags().BoolVar(&yes, "yes", false, "remove the nodes (default: dry run)")
	_ = cmd.MarkFlagRequired("older-than")
	return cmd
}
