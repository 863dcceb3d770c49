// Package tuner is the tuner service: every period it reads a window of
// each queue's telemetry from PostgreSQL through the collector's views,
// asks tuner/policy for a decision, pushes the changes of one switch in one
// gNMI Set (typed paths from gen/, through ygnmi) under the Commit
// Confirmed extension, confirms the commit only once telemetry shows the
// switch applied it and the objective did not get worse, and records every
// decision and its outcome in tuner_actions. The operator wins: a change to
// a tuned leaf the tuner did not make (seen in the telemetry, or in its
// watch of a queue's configuration around its own Set) holds that queue
// for operator_hold, and operators hold and release queues with rows of
// tuner_actions (outcome operator; operator.go).
//
// The pieces meet through small interfaces declared here: Source (the
// windows), Pusher (commit, confirm, cancel) and Recorder (the audit
// trail); PGSource, PGRecorder and GNMIPusher are the real ones. A switch
// that fails (unreachable, refusing the Set, telemetry with gaps) is
// logged and recorded, and the other switches are still served.
//
// The package must not depend on server/ (except the TLS helper of
// gnmi/auth), on the collector's code or on the simulator: it talks to
// switches over gNMI and to the collector through SQL views.
package tuner
