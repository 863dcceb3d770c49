package main

import "github.com/lhcnp/lhcnp/collector"

// collectorDB gives the collector the schema's migrations and partition
// maintenance.
func collectorDB() collector.DB { return collector.DB{} }
