package tuner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/lhcnp/lhcnp/internal/atomicfile"
)

// StateFile is the file under Config.StateDir that keeps, from a tuner
// that stopped to the one started next, the audit trail's writes the
// database did not take before the stop (docs/tuner.md, "Faults").
const StateFile = "unwritten.json"

// stateVersion is the layout of StateFile; a file of another version is
// refused with its path, not guessed at.
const stateVersion = 1

// unwrittenState is StateFile's content: every write the tuner still owes
// the audit trail. Each is safe to make twice (a row's key, an outcome
// appended once, a delete), so a file read again after a crash of the
// process that read it replays nothing twice.
type unwrittenState struct {
	Version int `json:"version"`
	// Operators are the operators' rows not recorded: their holds count
	// from the file until they are.
	Operators []Action `json:"operators,omitempty"`
	// Rows are the other rows not recorded (holds, errors).
	Rows []Action `json:"rows,omitempty"`
	// Outcomes are the outcomes not written, by row id.
	Outcomes []unwrittenOutcomeJSON `json:"outcomes,omitempty"`
	// Forget are the keys of decisions not pushed whose row must go.
	Forget []forgetKeyJSON `json:"forget,omitempty"`
}

type unwrittenOutcomeJSON struct {
	ID       int64      `json:"id"`
	Target   string     `json:"target"`
	Outcome  Outcome    `json:"outcome"`
	Reason   string     `json:"reason,omitempty"`
	Error    string     `json:"error,omitempty"`
	Judgment *Judgement `json:"judgement,omitempty"`
}

type forgetKeyJSON struct {
	Target string `json:"target"`
	Key    string `json:"key"`
}

// statePath is StateFile's path, "" when the tuner keeps no state.
func (t *Tuner) statePath() string {
	if t.cfg.StateDir == "" {
		return ""
	}
	return filepath.Join(t.cfg.StateDir, StateFile)
}

// owed says whether the tuner still owes the audit trail a write.
func (t *Tuner) owed() bool {
	return len(t.unrecordedOps) > 0 || len(t.unrecorded) > 0 || len(t.unwritten) > 0 || len(t.forget) > 0
}

// loadState takes what a tuner stopped before left unwritten (StateFile),
// to be written in the first periods as the tuner's own failed writes
// are. The file stays until a stop finds nothing owed (saveState): a crash
// before then reads it again, and every write in it is safe to make twice.
func (t *Tuner) loadState() error {
	path := t.statePath()
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("state_dir: %w", err)
	}
	var s unwrittenState
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("state_dir: %s: %w", path, err)
	}
	if s.Version != stateVersion {
		return fmt.Errorf("state_dir: %s: version %d, this tuner reads %d", path, s.Version, stateVersion)
	}
	t.unrecordedOps = append(t.unrecordedOps, s.Operators...)
	t.unrecorded = append(t.unrecorded, s.Rows...)
	for _, o := range s.Outcomes {
		t.unwritten[o.ID] = unwrittenOutcome{target: o.Target, outcome: o.Outcome, reason: o.Reason, errText: o.Error, judged: o.Judgment}
	}
	for _, f := range s.Forget {
		t.forget = append(t.forget, forgetKey{target: f.Target, key: f.Key})
	}
	if t.owed() {
		t.log.Warn("tuner: writes a stopped tuner owed the audit trail, written in the first periods", "file", path,
			"operators", len(s.Operators), "rows", len(s.Rows), "outcomes", len(s.Outcomes), "forget", len(s.Forget))
	}
	return nil
}

// saveState keeps what the audit trail did not take by the stop in
// StateFile, for the tuner started next; with nothing owed it removes the
// file (what a start read from it is written).
func (t *Tuner) saveState() error {
	path := t.statePath()
	if path == "" {
		return nil
	}
	if !t.owed() {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("state_dir: %w", err)
		}
		return nil
	}
	s := unwrittenState{Version: stateVersion, Operators: t.unrecordedOps, Rows: t.unrecorded}
	ids := make([]int64, 0, len(t.unwritten))
	for id := range t.unwritten {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		u := t.unwritten[id]
		s.Outcomes = append(s.Outcomes, unwrittenOutcomeJSON{ID: id, Target: u.target, Outcome: u.outcome,
			Reason: u.reason, Error: u.errText, Judgment: u.judged})
	}
	for _, f := range t.forget {
		s.Forget = append(s.Forget, forgetKeyJSON{Target: f.target, Key: f.key})
	}
	if err := os.MkdirAll(t.cfg.StateDir, 0o755); err != nil {
		return fmt.Errorf("state_dir: %w", err)
	}
	err := atomicfile.Write(path, 0o600, func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(s)
	}, atomicfile.Durable())
	if err != nil {
		return fmt.Errorf("state_dir: %w", err)
	}
	t.log.Warn("tuner: the database did not take every write before the stop; kept for the tuner started next", "file", path,
		"operators", len(s.Operators), "rows", len(s.Rows), "outcomes", len(s.Outcomes), "forget", len(s.Forget))
	return nil
}
