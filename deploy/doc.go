// Package deploy holds the files of the docker compose lab that are not Go:
// prometheus.yml and Grafana's provisioning (the PostgreSQL and Prometheus
// data sources and the lab dashboard). The top-level docker-compose.yml and
// Dockerfile use them; docs/lab.md ("docker compose") describes them.
//
// Its tests check them without a Docker engine: every Grafana query runs
// against a real PostgreSQL with the collector's schema and returns rows,
// promtool accepts prometheus.yml, the Dockerfile builds in stages and runs
// as a non-root user. The compose file itself is loaded with compose-go in
// cmd/lhcnp, where each service's command line is parsed by the binary.
//
// Nothing imports it.
package deploy
