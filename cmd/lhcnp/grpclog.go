package main

import (
	"fmt"
	"io"
)

// grpcBinaryLogVar is grpc-go's binary log filter variable, read once when
// the process starts (internal/binarylog's init): with it set, grpc-go
// builds a log entry of every matching RPC, client or server side, with its
// metadata (the gNMI username and password, in clear) and its messages.
const grpcBinaryLogVar = "GRPC_BINARY_LOG_FILTER"

// warnGRPCBinaryLog writes a warning on stderr (what: the command) when
// getenv (os.Getenv) has GRPC_BINARY_LOG_FILTER. lhcnp links no sink
// (google.golang.org/grpc/binarylog, whose SetSink would write the entries
// to a file, is imported by no package: TestNoGRPCBinaryLogSink), so the
// entries, passwords included, are built and dropped: the variable costs a
// copy of every message and logs nothing. Warned, not refused, for that;
// were a sink ever linked, the passwords would be written out, and this
// should refuse to start.
func warnGRPCBinaryLog(getenv func(string) string, stderr io.Writer, what string) {
	if f := getenv(grpcBinaryLogVar); f != "" {
		fmt.Fprintf(stderr, "%s: warning: %s=%q: grpc-go builds a log entry of every matching RPC, its metadata "+
			"(gNMI usernames and passwords) and messages included, a cost on every RPC; lhcnp writes them nowhere "+
			"(no binary log sink), so unset it\n", what, grpcBinaryLogVar, f)
	}
}
