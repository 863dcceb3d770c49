package collector

import (
	"github.com/lhcnp/lhcnp/collector/rows"
	"github.com/lhcnp/lhcnp/collector/writer"
)

// seedConverter records in conv what the latest table holds of a series:
// its timestamp and counter value (updates at or before it are not stored
// again), and, for a leaf of a queue's last-cnp, its value, so the queue's
// last CNP is known: sent again by the switch it makes no second event,
// and the next CNP gets from it the leaves its notification leaves out.
func seedConverter(conv *rows.Converter, s writer.Stored) {
	conv.Seed(s.ID, s.TS, s.V, s.IsCounter)
	conv.SeedValue(s.Path, s.Value)
}
