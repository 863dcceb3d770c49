package writer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/lhcnp/lhcnp/collector/collectormetrics"
	"github.com/lhcnp/lhcnp/collector/rows"
)

// A row PostgreSQL refuses goes to dead_letters. Should PostgreSQL refuse
// that dead letter too (a constraint or a trigger someone added to
// dead_letters: a permanent error, which no retry can help), the writer
// would otherwise retry the batch for ever, the target's later batches
// queued behind it. The row is kept instead in a file of the state
// directory, a JSON line each (WithRefusedFile), counted and logged once
// with both reasons, and the rest of the batch is stored. The line is
// written, and synced, before the batch's transaction commits, so that a
// crash between the two leaves it written, never lost. A try that did not
// commit (a crash, a connection cut, a two-phase commit rolled back) is
// tried again, by this writer or by the next process from the spill: the
// line is written once, keyed by its target, batch id and row. This
// writer remembers the lines it wrote (batchLedger.kept); for a batch it
// has not, it reads the file once (keptBefore), since another process may
// have tried the batch. A disk that cannot take it drops the row,
// counted (dropped_rows_total{reason="dead_letter_refused"}) and logged
// with the row itself.
//
// The file is never rotated: a rotation would lose rows no one has read.
// Its size is a gauge (refused_file_bytes), read at start and after each
// line, and a warning is logged when it passes WithRefusedFileWarnBytes,
// so that a trigger that keeps refusing is seen before the disk fills.
// The file is opened for each line (O_APPEND|O_CREATE), never held open:
// an operator may move it away while the collector runs, and the next line
// makes a new one; nothing is lost, the lines written are in the file moved.

// refusedLine is a line of the refused dead letters' file.
type refusedLine struct {
	Time    string          `json:"time"`
	Target  string          `json:"target"`
	BatchID int64           `json:"batch_id"`
	Row     json.RawMessage `json:"row"`               // the dead letter's row: {"table": ..., "row": ...}
	Error   string          `json:"error"`             // why the row was refused
	Refused string          `json:"dead_letter_error"` // why its dead letter was
}

// WithRefusedFile sets the file where a dead letter PostgreSQL refuses is
// kept (the collector's is state_dir/dead_letters.jsonl); without one
// such a row is dropped, counted and logged with the row.
func WithRefusedFile(path string) Option { return func(o *options) { o.refusedFile = path } }

// WithRefusedFileWarnBytes logs a warning when the refused file grows past
// n bytes, once each time it does (moved away or emptied, it may again);
// 0 (the default) never warns.
func WithRefusedFileWarnBytes(n int64) Option { return func(o *options) { o.refusedWarnBytes = n } }

// refusedAtStart reads the size of the refused file a previous run left
// (none: 0) into the gauge, with the warning if it is past the bound.
func (w *Writer) refusedAtStart() {
	if w.o.refusedFile == "" {
		return
	}
	fi, err := os.Stat(w.o.refusedFile)
	switch {
	case err == nil:
		w.refusedSize(fi.Size())
	case errors.Is(err, fs.ErrNotExist):
		w.refusedSize(0)
	default:
		w.o.log.Warn("refused file: its size unknown", "file", w.o.refusedFile, "err", err)
	}
}

// refusedSize records size, the refused file's, in the gauge, and logs
// the warning when it has just passed o.refusedWarnBytes.
func (w *Writer) refusedSize(size int64) {
	w.o.m.RefusedFileBytes.Set(float64(size))
	over := w.o.refusedWarnBytes > 0 && size > w.o.refusedWarnBytes
	if over && !w.refusedWarned {
		w.o.log.Warn("refused file past its warning size: rows PostgreSQL refused, whose dead letter it refused too (a constraint or trigger on dead_letters?); never rotated: read, replay or move it (docs/collector.md)",
			"file", w.o.refusedFile, "bytes", size, "warn_bytes", w.o.refusedWarnBytes)
	}
	w.refusedWarned = over
}

// keepRefused keeps d, a row of b whose dead letter PostgreSQL refused
// with err, in the refused file, once per writer goroutine's group (a
// retry of the batch finds it kept).
func (w *Writer) keepRefused(b *rows.Batch, d deadRow, err error) {
	row := d.json()
	l := w.ledgerOf(b.ID)
	if !l.keptRead {
		l.keptRead = true
		w.keptBefore(b, l.kept)
	}
	if l.kept[row] {
		return
	}
	l.kept[row] = true
	w.o.m.DeadLettersRefused.Inc()
	ferr := w.appendRefused(refusedLine{Time: time.Now().UTC().Format(time.RFC3339Nano), Target: b.Target, BatchID: b.ID,
		Row: json.RawMessage(row), Error: d.err.Error(), Refused: err.Error()})
	if ferr == nil {
		w.o.log.Warn("dead letter refused, the row kept in the refused file", "target", b.Target, "batch", b.ID,
			"table", d.table, "file", w.o.refusedFile, "err", d.err, "dead_letter_err", err)
		return
	}
	w.o.m.DroppedRows.WithLabelValues(collectormetrics.DropDeadLetterRefused).Inc()
	w.o.log.Error("dead letter refused, the row dropped", "target", b.Target, "batch", b.ID, "row", row,
		"err", d.err, "dead_letter_err", err, "file_err", ferr)
}

// keptBefore adds to kept the rows of b the refused file holds: written by
// a try of b whose transaction did not commit, in another process (this
// writer's own are in kept already), which counted them. A file that
// cannot be read is logged, and the rows written again: twice rather than
// lost.
func (w *Writer) keptBefore(b *rows.Batch, kept map[string]bool) {
	if w.o.refusedFile == "" {
		return
	}
	f, err := os.Open(w.o.refusedFile)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		w.o.log.Warn("refused file unread: a row an earlier try kept may be kept again", "file", w.o.refusedFile, "err", err)
		return
	}
	defer f.Close()
	// Only the lines naming b's batch id are decoded (a line is one
	// json.Marshal of refusedLine: batch_id written so).
	id := []byte(fmt.Sprintf(`"batch_id":%d,`, b.ID))
	r := bufio.NewReader(f)
	for {
		data, err := r.ReadBytes('\n')
		if bytes.Contains(data, id) {
			var l refusedLine
			// A line cut by a crash does not decode: written again.
			if json.Unmarshal(data, &l) == nil && l.Target == b.Target && l.BatchID == b.ID {
				kept[string(l.Row)] = true
			}
		}
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			w.o.log.Warn("refused file unread: a row an earlier try kept may be kept again", "file", w.o.refusedFile, "err", err)
			return
		}
	}
}

// appendRefused appends line to the refused file, syncs it and records
// its new size (refusedSize).
func (w *Writer) appendRefused(line refusedLine) error {
	if w.o.refusedFile == "" {
		return fmt.Errorf("no file for refused dead letters")
	}
	data, err := json.Marshal(line)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(w.o.refusedFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		if fi, serr := f.Stat(); serr == nil {
			w.refusedSize(fi.Size())
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
