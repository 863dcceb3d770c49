package main

import (
	"io"
	"log/slog"

	"github.com/lhcnp/lhcnp/internal/errline"
)

// textLog is the commands' log (lhcnp collector, tuner, switch; the lab's
// lab.log): slog's text records at info, or debug when verbose, an error
// value on one line (errline.ReplaceAttr: pgx's attempts, each on a line
// of its own and the same one twice, were one record's escaped lines).
func textLog(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: errline.ReplaceAttr}))
}
