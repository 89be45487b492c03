package runtime

import (
	"context"
	"fmt"
	"log/slog"
)

// zkLogger adapts go-zookeeper's Printf logger to slog at debug level: the
// client library logs every reconnect attempt, which is noise at info level.
// The session logs the state changes that matter itself.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	if z.l.Enabled(context.Background(), slog.LevelDebug) {
		z.l.Debug(fmt.Sprintf(format, args...), "component", "go-zookeeper")
	}
}
