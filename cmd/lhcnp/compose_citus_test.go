package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestComposeCitus: deploy/compose.citus.yaml over docker-compose.yml, as
// `docker compose -f docker-compose.yml -f deploy/compose.citus.yaml`
// merges them. The postgres service becomes a Citus coordinator (Citus's
// PostgreSQL 15 image) with a volume of its own, every worker service is
// registered by the one-shot citus-setup, which waits for all the nodes to
// be healthy, and the collector waits for it to have finished, on top of
// what it waited for before; every other service and DSN is unchanged.
func TestComposeCitus(t *testing.T) {
	base := loadCompose(t)
	p := loadCompose(t, "deploy/compose.citus.yaml")
	var workers []string
	for name := range p.Services {
		if strings.HasPrefix(name, "citus-worker-") {
			workers = append(workers, name)
		}
	}
	sort.Strings(workers)
	if len(workers) < 2 {
		t.Fatalf("workers %v, want at least two", workers)
	}
	for _, name := range append([]string{"postgres", "citus-setup"}, workers...) {
		s, ok := p.Services[name]
		if !ok {
			t.Fatalf("no service %s", name)
		}
		if !strings.HasPrefix(s.Image, "citusdata/citus:") || !strings.HasSuffix(s.Image, "-pg15") {
			t.Errorf("%s: image %q, want Citus's PostgreSQL 15 image", name, s.Image)
		}
	}
	pg := p.Services["postgres"]
	if len(pg.Volumes) != 1 || pg.Volumes[0].Source == base.Services["postgres"].Volumes[0].Source {
		t.Errorf("postgres: volumes %+v, want one of its own (a plain PostgreSQL's data directory is not a coordinator's)", pg.Volumes)
	}
	for _, name := range append([]string{"postgres"}, workers...) {
		s := p.Services[name]
		if len(s.Ports) != 0 && name != "postgres" {
			t.Errorf("%s: publishes %v; the nodes trust each other on the private network only", name, s.Ports)
		}
		if s.HealthCheck == nil || len(s.HealthCheck.Test) == 0 {
			t.Errorf("%s: citus-setup waits for it to be healthy, but it has no healthcheck", name)
		}
		if v := s.Environment["POSTGRES_DB"]; v == nil || *v != "lhcnp" {
			t.Errorf("%s: POSTGRES_DB %v, want lhcnp (the extension is created there)", name, v)
		}
	}
	setup := p.Services["citus-setup"]
	sql := strings.Join(setup.Command, " ")
	for _, w := range workers {
		if !strings.Contains(sql, fmt.Sprintf("citus_add_node('%s', 5432)", w)) {
			t.Errorf("citus-setup does not register %s:\n%s", w, sql)
		}
		if d, ok := setup.DependsOn[w]; !ok || d.Condition != "service_healthy" {
			t.Errorf("citus-setup: depends_on %s = %+v, want service_healthy", w, d)
		}
	}
	if !strings.Contains(sql, "citus_set_coordinator_host('postgres', 5432)") || setup.Command[0] != "psql" {
		t.Errorf("citus-setup: command %q, want psql registering the coordinator as postgres:5432", setup.Command)
	}
	if v := setup.Environment["PGHOST"]; v == nil || *v != "postgres" {
		t.Errorf("citus-setup: PGHOST %v, want postgres", v)
	}
	coll := p.Services["collector"]
	if d, ok := coll.DependsOn["citus-setup"]; !ok || d.Condition != "service_completed_successfully" {
		t.Errorf("collector: depends_on citus-setup = %+v, want service_completed_successfully", d)
	}
	for dep := range base.Services["collector"].DependsOn {
		if _, ok := coll.DependsOn[dep]; !ok {
			t.Errorf("collector: no longer waits for %s", dep)
		}
	}
	// Everything else is the plain lab's: same services, same commands and
	// DSNs.
	for _, name := range base.ServiceNames() {
		b, o := base.Services[name], p.Services[name]
		if name == "postgres" {
			continue
		}
		if !slices.Equal(b.Command, o.Command) || !slices.Equal(serviceEnv(b)(), serviceEnv(o)()) {
			t.Errorf("%s: command or environment changed by the Citus override", name)
		}
	}
}
