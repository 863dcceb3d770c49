package pgserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sync/errgroup"

	"github.com/lhcnp/lhcnp/internal/atomicfile"
)

// ErrCitusNotInstalled is returned (wrapped) by FindCitus and StartCluster
// when the Citus extension is not installed into the server found by
// FindBinaries.
var ErrCitusNotInstalled = errors.New("the Citus extension (citus.so, citus.control) is not installed into PostgreSQL; install it as root with scripts/deps.sh citus")

// FindCitus checks that the server found by FindBinaries has the Citus
// extension: its library in the server's lib directory and its control file
// in the share directory (Debian's layout, which install.sh of the prebuilt
// Citus follows). The error wraps ErrNotInstalled or ErrCitusNotInstalled.
func FindCitus() error {
	bin, err := FindBinaries()
	if err != nil {
		return err
	}
	return findCitus(bin)
}

func findCitus(binDir string) error {
	version := filepath.Base(filepath.Dir(binDir))
	lib := filepath.Join(filepath.Dir(binDir), "lib", "citus.so")
	control := filepath.Join("/usr/share/postgresql", version, "extension", "citus.control")
	for _, f := range []string{lib, control} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%w (no %s)", ErrCitusNotInstalled, f)
		}
	}
	return nil
}

// Cluster is a private Citus cluster on this machine: a coordinator and
// workers, each a Server of its own (data directory, free port), all with
// shared_preload_libraries=citus. Citus keeps its metadata per database, so
// a database is made distributed with CreateDatabase, which creates it on
// every node and registers the nodes in it.
type Cluster struct {
	Coordinator *Server
	Workers     []*Server

	nodeOpts []Option // a temporary cluster's node options, for AddWorker

	// addNode serializes citus_add_node: its metadata sync updates the
	// workers' shared catalogs (roles are cluster-wide, not per database),
	// and two at once on one worker, for two databases, fail the second
	// with "failure on connection marked as essential" (the worker's log:
	// "tuple concurrently updated"). Tests create databases in parallel.
	addNode sync.Mutex
}

// AddWorker starts one more worker, as the others were started, and adds
// it to database name (the database and the extension created on it,
// citus_add_node on the coordinator). It holds no shards until they are
// moved to it (rebalance_table_shards). Not for a cluster in a directory.
func (c *Cluster) AddWorker(ctx context.Context, name string) (*Server, error) {
	if c.nodeOpts == nil {
		return nil, errors.New("pgserver: AddWorker: the cluster was not started by StartCluster")
	}
	for _, o := range c.nodeOpts {
		var x options
		o(&x)
		if x.dataDir != "" {
			return nil, errors.New("pgserver: AddWorker: not for a cluster in a directory")
		}
	}
	s, err := Start(ctx, c.nodeOpts...)
	if err != nil {
		return nil, fmt.Errorf("citus worker: %w", err)
	}
	c.Workers = append(c.Workers, s)
	if err := s.CreateDatabase(ctx, name, ""); err != nil {
		return s, err
	}
	if err := execOn(ctx, s.DSN(name), "CREATE EXTENSION citus"); err != nil {
		return s, err
	}
	c.addNode.Lock()
	defer c.addNode.Unlock()
	if err := execOn(ctx, c.Coordinator.DSN(name), fmt.Sprintf("SELECT citus_add_node('127.0.0.1', %d)", s.Port())); err != nil {
		return s, err
	}
	return s, nil
}

// StartCluster starts a coordinator and `workers` workers with opts
// (WithDataDir and WithPort are not allowed: every node has its own). On an
// error the nodes already started are closed.
func StartCluster(ctx context.Context, workers int, opts ...Option) (*Cluster, error) {
	return StartClusterIn(ctx, "", 0, workers, opts...)
}

// StartClusterIn is StartCluster with the nodes' data directories under
// dir (dir/coordinator, dir/worker-1, ...: kept, so the next start finds
// the cluster and its data again) and the coordinator on port (0: a free
// one). Every node's port is kept in dir/ports.json and taken again at
// the next start (a coordinator port of 0 included), as Citus's metadata
// names the workers by port: a kept port another program holds now fails
// the start, naming it. dir "" is StartCluster's temporary directories.
func StartClusterIn(ctx context.Context, dir string, port, workers int, opts ...Option) (*Cluster, error) {
	var kept clusterPorts
	if dir != "" {
		// The nodes' data directories are below it: as root, the
		// postgres user must reach them.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("pgserver: %w", err)
		}
		var err error
		if kept, err = readClusterPorts(dir); err != nil {
			return nil, err
		}
		if len(kept.Workers) > workers {
			return nil, fmt.Errorf("pgserver: the cluster in %s has %d workers (%s); start it with as many", dir, len(kept.Workers), filepath.Join(dir, portsFile))
		}
		if port == 0 {
			port = kept.Coordinator
		}
	}
	c, err := startCluster(ctx, dir, port, kept.Workers, workers, opts...)
	if err != nil || dir == "" {
		return c, err
	}
	kept = clusterPorts{Coordinator: c.Coordinator.Port()}
	for _, w := range c.Workers {
		kept.Workers = append(kept.Workers, w.Port())
	}
	if err := writeClusterPorts(dir, kept); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// portsFile keeps a cluster's ports in its directory.
const portsFile = "ports.json"

type clusterPorts struct {
	Coordinator int   `json:"coordinator"`
	Workers     []int `json:"workers"`
}

func readClusterPorts(dir string) (clusterPorts, error) {
	var p clusterPorts
	b, err := os.ReadFile(filepath.Join(dir, portsFile))
	if errors.Is(err, os.ErrNotExist) {
		return p, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &p)
	}
	if err != nil {
		return p, fmt.Errorf("pgserver: %s: %w", filepath.Join(dir, portsFile), err)
	}
	return p, nil
}

// writeClusterPorts replaces the ports file whole (internal/atomicfile):
// a cluster started while another writes it reads the old ports or the new.
func writeClusterPorts(dir string, p clusterPorts) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, portsFile), 0o644, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	}); err != nil {
		return fmt.Errorf("pgserver: %w", err)
	}
	return nil
}

func startCluster(ctx context.Context, dir string, port int, workerPorts []int, workers int, opts ...Option) (*Cluster, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.dataDir != "" || o.port != 0 {
		return nil, errors.New("pgserver: StartCluster: every node has its own data directory and port; WithDataDir and WithPort do not apply")
	}
	if workers < 1 {
		return nil, fmt.Errorf("pgserver: StartCluster: %d workers, want at least 1", workers)
	}
	if err := FindCitus(); err != nil {
		return nil, err
	}
	// The nodes talk to each other over 127.0.0.1 with trust authentication;
	// without sslmode=disable libpq in a node run as root's postgres user
	// would try root's client certificate.
	nodeOpts := append(append([]Option(nil), opts...),
		WithSetting("shared_preload_libraries", "citus"),
		WithSetting("citus.node_conninfo", "sslmode=disable"))
	c := &Cluster{nodeOpts: nodeOpts}
	for i := 0; i <= workers; i++ {
		own := nodeOpts
		if dir != "" {
			name := "coordinator"
			if i > 0 {
				name = fmt.Sprintf("worker-%d", i)
			}
			own = append(append([]Option(nil), nodeOpts...), WithDataDir(filepath.Join(dir, name)))
		}
		if i == 0 && port != 0 {
			own = append(append([]Option(nil), own...), WithPort(port))
		}
		if i > 0 && i <= len(workerPorts) {
			own = append(append([]Option(nil), own...), WithPort(workerPorts[i-1]))
		}
		s, err := Start(ctx, own...)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("citus node %d: %w", i, err)
		}
		if i == 0 {
			c.Coordinator = s
		} else {
			c.Workers = append(c.Workers, s)
		}
	}
	return c, nil
}

// Nodes is the coordinator followed by the workers.
func (c *Cluster) Nodes() []*Server {
	var nodes []*Server
	if c.Coordinator != nil {
		nodes = append(nodes, c.Coordinator)
	}
	return append(nodes, c.Workers...)
}

// DSN is the connection string of database dbname on the coordinator, the
// node clients talk to.
func (c *Cluster) DSN(dbname string) string { return c.Coordinator.DSN(dbname) }

// CreateDatabase creates database name on every node with the citus
// extension, then, on the coordinator, registers the coordinator
// (citus_set_coordinator_host) and every worker (citus_add_node).
func (c *Cluster) CreateDatabase(ctx context.Context, name string) error {
	var g errgroup.Group // node by node, at once
	for _, s := range c.Nodes() {
		g.Go(func() error {
			if err := s.CreateDatabase(ctx, name, ""); err != nil {
				return err
			}
			return execOn(ctx, s.DSN(name), "CREATE EXTENSION citus")
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, c.Coordinator.DSN(name))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	c.addNode.Lock()
	defer c.addNode.Unlock()
	if _, err := conn.Exec(ctx, "SELECT citus_set_coordinator_host('127.0.0.1', $1)", c.Coordinator.Port()); err != nil {
		return fmt.Errorf("citus_set_coordinator_host: %w", err)
	}
	for _, w := range c.Workers {
		if _, err := conn.Exec(ctx, "SELECT citus_add_node('127.0.0.1', $1)", w.Port()); err != nil {
			return fmt.Errorf("citus_add_node port %d: %w", w.Port(), err)
		}
	}
	return nil
}

// EnsureDatabase is CreateDatabase for a cluster that may have it
// already (a lab's second start, on the ports StartClusterIn kept): the
// database and the extension are created where they are missing and the
// workers pg_dist_node does not have are added.
func (c *Cluster) EnsureDatabase(ctx context.Context, name string) error {
	for _, s := range c.Nodes() {
		if err := s.CreateDatabase(ctx, name, ""); err != nil && !isDuplicateDatabase(err) {
			return err
		}
		if err := execOn(ctx, s.DSN(name), "CREATE EXTENSION IF NOT EXISTS citus"); err != nil {
			return err
		}
	}
	conn, err := pgx.Connect(ctx, c.Coordinator.DSN(name))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	c.addNode.Lock()
	defer c.addNode.Unlock()
	if _, err := conn.Exec(ctx, "SELECT citus_set_coordinator_host('127.0.0.1', $1)", c.Coordinator.Port()); err != nil {
		return fmt.Errorf("citus_set_coordinator_host: %w", err)
	}
	for _, w := range c.Workers {
		var known bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_dist_node WHERE nodename = '127.0.0.1' AND nodeport = $1)", w.Port()).Scan(&known); err != nil {
			return err
		}
		if known {
			continue
		}
		if _, err := conn.Exec(ctx, "SELECT citus_add_node('127.0.0.1', $1)", w.Port()); err != nil {
			return fmt.Errorf("citus_add_node port %d: %w", w.Port(), err)
		}
	}
	return nil
}

// isDuplicateDatabase reports PostgreSQL's duplicate_database (42P04).
func isDuplicateDatabase(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P04"
}

// DropDatabase drops database name on every node, if it exists there.
func (c *Cluster) DropDatabase(ctx context.Context, name string) error {
	var errs []error
	for _, s := range c.Nodes() {
		errs = append(errs, s.DropDatabase(ctx, name))
	}
	return errors.Join(errs...)
}

// Close closes every node (stops it, removes its temporary directory).
// Close is idempotent.
func (c *Cluster) Close() error {
	var errs []error
	for _, s := range c.Nodes() {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

func execOn(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}
