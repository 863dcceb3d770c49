package writer_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lhcnp/lhcnp/internal/pgtest"
)

// cutAt is where a fault cuts a statement's connection.
type cutAt int

const (
	beforeSent  cutAt = iota + 1 // the statement never reaches the database
	afterCommit                  // the statement commits; its answer is lost
)

// errAnswerLost is what a connection cut after the commit reads.
var errAnswerLost = errors.New("test: connection cut after the commit, the answer lost")

// cutter cuts the connection of chosen statements: those match takes, and
// the pipelines (pgx batches, the extended protocol's statements sent
// together, one Sync at the end) batch takes, by their number among them
// (from 1). It is the pool's tracer, which sees every statement's SQL and
// arguments (a cached statement is sent by name) and every pipeline's
// statements, and its dialer, whose connections it cuts.
type cutter struct {
	match func(pgx.TraceQueryStartData) bool
	batch func(*pgx.Batch) bool
	at    map[int]cutAt
	// onFault, if set, runs before each fault, on the writer's goroutine:
	// what the test makes happen at that point (the lease moved).
	onFault func()
	// onCut, if set, runs once a connection cut afterCommit dropped the
	// answer of what committed, before the client reads the error, on the
	// writer's goroutine: what the test makes happen then (the writer's
	// ctx ends).
	onCut func()

	mu    sync.Mutex
	seen  int // statements match took
	fired int // faults made
}

// commitPipeline takes the pipelines that end with COMMIT: on one node a
// batch's or a group's ledger rows, events and latest (storeGroup), on
// Citus a part's or a shard's samples (storePart, storeShardGroup).
func commitPipeline(b *pgx.Batch) bool {
	n := len(b.QueuedQueries)
	return n > 0 && b.QueuedQueries[n-1].SQL == "COMMIT"
}

// eventsInsert takes the INSERTs of events.
func eventsInsert(data pgx.TraceQueryStartData) bool {
	return strings.HasPrefix(data.SQL, "INSERT INTO events")
}

// pool is a pool on dsn whose statements c cuts.
func (c *cutter) pool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	return pgtest.Pool(t, dsn, func(cfg *pgxpool.Config) {
		cfg.ConnConfig.Tracer = c
		cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &cutConn{Conn: conn}, nil
		}
	})
}

// faults is how many faults c made.
func (c *cutter) faults() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fired
}

// TraceQueryStart runs before the statement is sent, on an idle
// connection: the server's next message answers it.
func (c *cutter) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if c.match != nil && c.match(data) {
		c.take(conn)
	}
	return ctx
}

func (c *cutter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart runs before a pipeline is sent (before the statements
// it prepares first, whose answers have no CommandComplete and pass). Cut
// afterCommit, the connection passes the server's messages until a read
// brings the first statement's CommandComplete, then drops them up to the
// ReadyForQuery that answers the pipeline's Sync, sent once its last
// statement (a COMMIT) ran: the pipeline committed, and the client heard
// none of it, its statements' answers or the COMMIT's.
func (c *cutter) TraceBatchStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	if c.batch != nil && c.batch(data.Batch) {
		c.take(conn)
	}
	return ctx
}

func (c *cutter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *cutter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// take counts a statement or pipeline taken and makes its fault, if any.
func (c *cutter) take(conn *pgx.Conn) {
	c.mu.Lock()
	c.seen++
	at := c.at[c.seen]
	if at != 0 {
		c.fired++
	}
	c.mu.Unlock()
	if at != 0 && c.onFault != nil {
		c.onFault()
	}
	cc := conn.PgConn().Conn().(*cutConn) // sslmode=disable: no TLS around it
	switch at {
	case beforeSent:
		cc.Conn.Close()
	case afterCommit:
		cc.scan = msgScan{}
		cc.onCut = c.onCut
		cc.armed.Store(true)
	}
}

// cutConn is a connection to PostgreSQL that, armed, passes the server's
// messages until the statement's CommandComplete, then reads and drops
// the rest up to ReadyForQuery (which the server sends once the implicit
// transaction of the statement committed), and closes: the statement
// committed, and the client never hears it.
type cutConn struct {
	net.Conn
	armed atomic.Bool // set by the tracer; read by pgx's reader
	scan  msgScan
	onCut func() // the cutter's, set before armed
}

func (c *cutConn) Read(p []byte) (int, error) {
	if !c.armed.Load() {
		return c.Conn.Read(p)
	}
	n, err := c.Conn.Read(p)
	c.scan.feed(p[:n])
	if !c.scan.complete {
		// The statement's prepare (Parse, Describe) has no
		// CommandComplete: it passes.
		return n, err
	}
	buf := make([]byte, 4096)
	for !c.scan.committed && err == nil {
		n, err = c.Conn.Read(buf)
		c.scan.feed(buf[:n])
	}
	c.armed.Store(false)
	c.Conn.Close()
	if c.onCut != nil {
		c.onCut()
	}
	return 0, errAnswerLost
}

// msgScan follows the messages of the server's stream (a type byte, then
// a length that counts itself): complete once a CommandComplete ('C')
// began, committed once a ReadyForQuery ('Z') after it ended.
type msgScan struct {
	hdr       [5]byte
	hdrN      int
	body      int // bytes of the current message's body still to come
	complete  bool
	committed bool
}

func (s *msgScan) feed(b []byte) {
	for len(b) > 0 {
		if s.body > 0 {
			k := min(s.body, len(b))
			s.body -= k
			b = b[k:]
			if s.body == 0 {
				s.ended()
			}
			continue
		}
		k := copy(s.hdr[s.hdrN:], b)
		s.hdrN += k
		b = b[k:]
		if s.hdrN < len(s.hdr) {
			continue
		}
		s.hdrN = 0
		if s.hdr[0] == 'C' {
			s.complete = true
		}
		if s.body = int(binary.BigEndian.Uint32(s.hdr[1:])) - 4; s.body == 0 {
			s.ended()
		}
	}
}

// ended: the message of type hdr[0] ended.
func (s *msgScan) ended() {
	if s.hdr[0] == 'Z' && s.complete {
		s.committed = true
	}
}
