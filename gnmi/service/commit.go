package service

import (
	"context"
	"fmt"
	"time"

	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gnmi/clock"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/gnmi/proto/gnmi_ext"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DefaultRollbackDuration is how long a commit waits for its confirmation
// when the request gives no rollback_duration (gnmi-commit-confirmed.md
// 3.2.1: "Server should maintain a default 10 minutes duration").
const DefaultRollbackDuration = 10 * time.Minute

// CommitEvent is what happened to a commit-confirmed transaction.
type CommitEvent struct {
	ID string
	// Kind is "commit", "confirm", "cancel", "set-rollback-duration",
	// "rollback" (the duration ran out) or "rollback-failed".
	Kind     string
	Deadline time.Time // when the commit is rolled back unless confirmed
	Err      error     // of a rollback-failed
}

// pendingCommit is a commit waiting for confirmation. The server holds one
// at a time (3.2: "a singleton resource").
type pendingCommit struct {
	id       string
	before   *oc.Root // the intended configuration the commit replaced
	deadline time.Time
	timer    clock.Timer
	done     chan struct{} // closed when confirmed, cancelled or rolled back
}

// expiredCommit is the last commit rolled back for want of a confirmation,
// so that a late confirm says so.
type expiredCommit struct {
	id string
	at time.Time
}

// PendingCommit reports the commit waiting for confirmation, if any.
func (h *Handler) PendingCommit() (id string, deadline time.Time, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending == nil {
		return "", time.Time{}, false
	}
	return h.pending.id, h.pending.deadline, true
}

// commitExtension returns the request's gnmi_ext.Commit, if any; more than
// one, or one without an id or an action, is INVALID_ARGUMENT.
func commitExtension(req *gnmi.SetRequest) (*gnmi_ext.Commit, error) {
	var cm *gnmi_ext.Commit
	for _, e := range req.GetExtension() {
		c := e.GetCommit()
		if c == nil {
			continue
		}
		if cm != nil {
			return nil, status.Error(codes.InvalidArgument, "commit: more than one commit extension")
		}
		cm = c
	}
	if cm == nil {
		return nil, nil
	}
	if cm.GetId() == "" {
		return nil, status.Error(codes.InvalidArgument, "commit: id is required")
	}
	if cm.GetAction() == nil {
		return nil, status.Errorf(codes.InvalidArgument, "commit %q: no action (commit, confirm, cancel or set_rollback_duration)", cm.GetId())
	}
	return cm, nil
}

// commitAction serves a SetRequest with the Commit extension
// (gnmi-commit-confirmed.md): commit applies the request's operations now
// and rolls them back unless confirmed within the rollback duration;
// confirm keeps them; cancel rolls back at once; set_rollback_duration moves
// the deadline. Only a confirmation persists the configuration
// (WithPersister): a pending commit, its cancel and its rollback never do.
// h.mu is held.
//
// Codes as the document gives them: a commit while another is pending, or
// a confirm, cancel or new duration with none pending, is
// FAILED_PRECONDITION; an id that is not the pending one is
// INVALID_ARGUMENT; so are operations sent with confirm, cancel or
// set_rollback_duration (they change nothing but the pending commit) and a
// duration that is not positive.
func (h *Handler) commitAction(ctx context.Context, req *gnmi.SetRequest, ops []setOp, cm *gnmi_ext.Commit) (*gnmi.SetResponse, error) {
	id := cm.GetId()
	if creq := cm.GetCommit(); creq != nil {
		if h.pending != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "commit %q: commit %q is waiting for confirmation until %s: confirm or cancel it first",
				id, h.pending.id, h.pending.deadline.UTC().Format(time.RFC3339))
		}
		d := DefaultRollbackDuration
		if rd := creq.GetRollbackDuration(); rd != nil {
			if err := rd.CheckValid(); err != nil || rd.AsDuration() < 0 {
				return nil, status.Errorf(codes.InvalidArgument, "commit %q: rollback_duration %v is not a positive duration", id, rd.AsDuration())
			}
			if rd.AsDuration() > 0 {
				d = rd.AsDuration()
			}
		}
		before := h.intended
		resp, err := h.set(ctx, req, ops, false)
		if err != nil {
			return nil, err
		}
		h.startPending(id, before, d)
		return resp, nil
	}
	// confirm, cancel, set_rollback_duration: about the pending commit only.
	action := "confirm"
	switch {
	case cm.GetCancel() != nil:
		action = "cancel"
	case cm.GetSetRollbackDuration() != nil:
		action = "set_rollback_duration"
	}
	if len(ops) > 0 {
		return nil, status.Errorf(codes.InvalidArgument, "commit %q: %s takes no update, replace or delete", id, action)
	}
	p := h.pending
	if p == nil {
		if h.expired.id == id {
			return nil, status.Errorf(codes.FailedPrecondition, "commit %q: %s: it was rolled back at %s, not confirmed within its rollback_duration",
				id, action, h.expired.at.UTC().Format(time.RFC3339Nano))
		}
		return nil, status.Errorf(codes.FailedPrecondition, "commit %q: %s: no commit is waiting for confirmation", id, action)
	}
	if p.id != id {
		return nil, status.Errorf(codes.InvalidArgument, "commit %q: %s: the commit waiting for confirmation is %q", id, action, p.id)
	}
	switch action {
	case "confirm":
		// The confirmation makes the commit durable: kept first, so that
		// a failure leaves it pending (and its timer running).
		if err := h.persist(ctx, h.intended); err != nil {
			return nil, status.Errorf(codes.Internal, "commit %q: confirm: startup configuration: %v; the commit is still waiting for confirmation", id, err)
		}
		h.endPending()
		h.event(CommitEvent{ID: id, Kind: "confirm"})
	case "cancel":
		if err := h.rollback(ctx); err != nil {
			return nil, err.status(req, nil)
		}
		h.event(CommitEvent{ID: id, Kind: "cancel"})
	default:
		rd := cm.GetSetRollbackDuration().GetRollbackDuration()
		if rd == nil || rd.CheckValid() != nil || rd.AsDuration() <= 0 {
			return nil, status.Errorf(codes.InvalidArgument, "commit %q: set_rollback_duration needs a positive rollback_duration", id)
		}
		p.deadline = h.o.clk.Now().Add(rd.AsDuration())
		p.timer.Reset(rd.AsDuration())
		h.event(CommitEvent{ID: id, Kind: "set-rollback-duration", Deadline: p.deadline})
	}
	return &gnmi.SetResponse{Prefix: req.GetPrefix(), Timestamp: h.o.clk.Now().UnixNano()}, nil
}

// startPending records a commit and arms its rollback.
func (h *Handler) startPending(id string, before *oc.Root, d time.Duration) {
	p := &pendingCommit{id: id, before: before, deadline: h.o.clk.Now().Add(d),
		timer: h.o.clk.NewTimer(d), done: make(chan struct{})}
	h.pending = p
	h.event(CommitEvent{ID: id, Kind: "commit", Deadline: p.deadline})
	go h.await(p)
}

// await rolls p back when its timer fires first.
func (h *Handler) await(p *pendingCommit) {
	select {
	case <-p.done:
		return
	case <-p.timer.C():
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending != p {
		return // confirmed or cancelled while the timer fired
	}
	if now := h.o.clk.Now(); now.Before(p.deadline) {
		// The deadline moved (set_rollback_duration) after this firing
		// was sent: wait again.
		p.timer.Reset(p.deadline.Sub(now))
		go h.await(p)
		return
	}
	if err := h.rollback(context.Background()); err != nil {
		h.o.log.Error("commit confirmed: automatic rollback failed", "id", p.id, "err", err.err)
		h.event(CommitEvent{ID: p.id, Kind: "rollback-failed", Err: err.err})
		return
	}
	h.expired = expiredCommit{id: p.id, at: h.o.clk.Now()}
	h.o.log.Warn("commit confirmed: not confirmed in time, rolled back", "id", p.id, "deadline", p.deadline)
	h.event(CommitEvent{ID: p.id, Kind: "rollback", Deadline: p.deadline})
}

// rollback restores the configuration the pending commit replaced, in the
// dataplane and the store, as one transaction. h.mu is held. On failure the
// commit stays pending (and applied).
func (h *Handler) rollback(ctx context.Context) *opError {
	p := h.pending
	// Not persisted: the startup configuration is still the one before
	// the commit (only a confirmation persists).
	if _, err := h.commit(ctx, p.before, false); err != nil {
		err.err = fmt.Errorf("rollback of commit %q: %w", p.id, err.err)
		if err.code == codes.InvalidArgument {
			// The configuration was in force before: its refusal now is
			// the target's fault, not the client's.
			err.code = codes.Internal
		}
		return err
	}
	h.endPending()
	return nil
}

func (h *Handler) endPending() {
	h.pending.timer.Stop()
	close(h.pending.done)
	h.pending = nil
}

func (h *Handler) event(e CommitEvent) {
	if h.o.onEvent != nil {
		h.o.onEvent(e)
	}
}
