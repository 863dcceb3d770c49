package northbound

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Subscribe serves a subscription list. With the History extension it is
// answered from the database (history.go). Otherwise each addressed
// switch's subscribe.Server serves it from that switch's store, as the
// switch itself would, with the prefix's target set to the switch's name;
// for several switches ("*" or an empty target) their responses are merged
// into the one stream: one sync_response once every switch has sent its
// initial data (per poll in POLL mode), and a switch that appears later
// joins a STREAM or POLL subscription with its own initial data.
func (s *Server) Subscribe(rpc gnmi.GNMI_SubscribeServer) error {
	req, err := rpc.Recv()
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return err
	case req.GetSubscribe() == nil:
		return status.Error(codes.InvalidArgument, "the first message must be a subscription list")
	}
	h, err := historyOf(req)
	if err != nil {
		return err
	}
	if h != nil {
		return s.history(rpc, req.GetSubscribe(), h)
	}
	t := req.GetSubscribe().GetPrefix().GetTarget()
	views, err := s.resolveTargets(t)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(rpc.Context())
	defer cancel()
	m := &mux{srv: s, rpc: rpc, req: req, ctx: ctx, cancel: cancel, mode: req.GetSubscribe().GetMode(),
		all: t == "" || t == AllTargets, subs: map[string]*subStream{}, want: 1, errc: make(chan error, 1)}
	return m.run(views)
}

// mux merges the streams of several switches into one Subscribe RPC.
type mux struct {
	srv    *Server
	rpc    gnmi.GNMI_SubscribeServer
	req    *gnmi.SubscribeRequest
	ctx    context.Context
	cancel context.CancelFunc
	mode   gnmi.SubscriptionList_Mode
	all    bool

	sendMu sync.Mutex // one Send at a time on the RPC

	mu   sync.Mutex
	subs map[string]*subStream
	want int // sync_responses owed to the client: 1, plus one per poll
	sent int // sync_responses sent
	wg   sync.WaitGroup
	errc chan error // the first error of a switch's stream
}

// subStream is the gnmi.GNMI_SubscribeServer one switch's subscribe.Server
// serves: its first message is the client's request with the switch as
// target, then the client's polls; what it sends goes to the client.
type subStream struct {
	gnmi.GNMI_SubscribeServer // the client's RPC, for headers and trailers
	m                         *mux
	name                      string
	first                     *gnmi.SubscribeRequest
	polls                     chan struct{}
	syncs                     int // sync_responses it sent (under m.mu)
}

func (ss *subStream) Context() context.Context { return ss.m.ctx }

func (ss *subStream) Recv() (*gnmi.SubscribeRequest, error) {
	if r := ss.first; r != nil {
		ss.first = nil
		return r, nil
	}
	select {
	case <-ss.polls:
		return pollRequest, nil
	case <-ss.m.ctx.Done():
		return nil, io.EOF
	}
}

var pollRequest = &gnmi.SubscribeRequest{Request: &gnmi.SubscribeRequest_Poll{Poll: &gnmi.Poll{}}}

func (ss *subStream) Send(r *gnmi.SubscribeResponse) error {
	if r.GetSyncResponse() {
		ss.m.mu.Lock()
		ss.syncs++
		n := ss.m.syncsDueLocked()
		ss.m.mu.Unlock()
		return ss.m.sendSyncs(n)
	}
	ss.m.sendMu.Lock()
	defer ss.m.sendMu.Unlock()
	return ss.m.rpc.Send(r)
}

// syncsDueLocked counts the sync_responses every switch has reached and
// the client has not had yet, and marks them sent.
func (m *mux) syncsDueLocked() int {
	n := 0
	for m.sent < m.want {
		for _, ss := range m.subs {
			if ss.syncs < m.sent+1 {
				return n
			}
		}
		m.sent++
		n++
	}
	return n
}

var syncResponse = &gnmi.SubscribeResponse{Response: &gnmi.SubscribeResponse_SyncResponse{SyncResponse: true}}

func (m *mux) sendSyncs(n int) error {
	m.sendMu.Lock()
	defer m.sendMu.Unlock()
	for range n {
		if err := m.rpc.Send(syncResponse); err != nil {
			return err
		}
	}
	return nil
}

// start serves one switch's stream in its own goroutine (m.mu held).
func (m *mux) startLocked(v *switchView) {
	first := proto.Clone(m.req).(*gnmi.SubscribeRequest)
	sl := first.GetSubscribe()
	if sl.Prefix == nil {
		sl.Prefix = &gnmi.Path{}
	}
	sl.Prefix.Target = v.name
	ss := &subStream{GNMI_SubscribeServer: m.rpc, m: m, name: v.name, first: first, polls: make(chan struct{}, 1),
		syncs: m.sent} // a switch joining late owes only the syncs still to come
	m.subs[v.name] = ss
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		err := v.sub.Subscribe(ss)
		if err == nil && m.mode != gnmi.SubscriptionList_ONCE && m.ctx.Err() == nil {
			return // cannot happen: STREAM and POLL end with the context
		}
		if err != nil {
			select {
			case m.errc <- err:
			default:
			}
		}
	}()
}

func (m *mux) run(views []*switchView) error {
	m.mu.Lock()
	for _, v := range views {
		m.startLocked(v)
	}
	n := m.syncsDueLocked() // none addressed: the sync is owed at once
	m.mu.Unlock()
	defer m.wg.Wait()
	defer m.cancel()
	if err := m.sendSyncs(n); err != nil {
		return err
	}
	if m.mode == gnmi.SubscriptionList_ONCE {
		done := make(chan struct{})
		go func() { m.wg.Wait(); close(done) }()
		select {
		case <-done:
			select {
			case err := <-m.errc:
				return err
			default:
				return nil
			}
		case err := <-m.errc:
			return err
		case <-m.ctx.Done():
			return nil
		}
	}
	recvErr := make(chan error, 1)
	go func() { recvErr <- m.receive() }()
	for {
		var added <-chan struct{}
		if m.all {
			c, drop := m.srv.added()
			defer drop()
			added = c
			if err := m.join(); err != nil {
				return err
			}
		}
		select {
		case <-m.ctx.Done():
			return nil
		case err := <-m.errc:
			return err
		case err := <-recvErr:
			if err != nil {
				return err
			}
			recvErr = nil // the client closed its side; serve until it cancels
		case <-added:
		}
	}
}

// join starts the streams of switches that appeared since the last call.
func (m *mux) join() error {
	views, err := m.srv.resolveTargets(AllTargets)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range views {
		if m.subs[v.name] == nil {
			m.startLocked(v)
		}
	}
	return nil
}

// receive reads the client's polls and hands one to every switch.
func (m *mux) receive() error {
	for {
		req, err := m.rpc.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case req.GetPoll() != nil && m.mode == gnmi.SubscriptionList_POLL:
			m.mu.Lock()
			m.want++
			subs := make([]*subStream, 0, len(m.subs))
			for _, ss := range m.subs {
				subs = append(subs, ss)
			}
			n := m.syncsDueLocked()
			m.mu.Unlock()
			if err := m.sendSyncs(n); err != nil {
				return err
			}
			for _, ss := range subs {
				select {
				case ss.polls <- struct{}{}:
				case <-m.ctx.Done():
					return nil
				}
			}
		case req.GetPoll() != nil:
			return status.Errorf(codes.InvalidArgument, "poll request on a %v subscription", m.mode)
		case req.GetSubscribe() != nil:
			return status.Error(codes.InvalidArgument, "a subscription list was already received on this stream")
		default:
			return status.Error(codes.InvalidArgument, "unknown subscribe request")
		}
	}
}

// added returns a channel closed when a target appears, and a function
// that forgets it.
func (s *Server) added() (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := make(chan struct{})
	s.watch[c] = struct{}{}
	return c, func() {
		s.mu.Lock()
		delete(s.watch, c)
		s.mu.Unlock()
	}
}
