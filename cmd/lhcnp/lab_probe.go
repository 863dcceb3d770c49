package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// runLabProbe implements `lhcnp lab probe`: one health check, for the
// compose file's healthchecks (the image has no shell, curl or wget).
// --http URL wants a 2xx answer; --gnmi ADDR a gNMI Capabilities answer
// over plain gRPC. Exit status 0 when healthy, 1 otherwise.
func runLabProbe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lab probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	httpURL := fs.String("http", "", "URL that must answer 2xx")
	gnmiAddr := fs.String("gnmi", "", "gNMI address (host:port, plain gRPC) that must answer Capabilities")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if err := parseFlagsOnly(fs, args, stderr, "usage: lhcnp lab probe (--http URL | --gnmi ADDR) [--timeout D]"); err != nil {
		return err
	}
	if (*httpURL == "") == (*gnmiAddr == "") {
		fs.Usage()
		return usageError{"choose --http URL or --gnmi ADDR"}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if *httpURL != "" {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, *httpURL, nil)
		if err != nil {
			return usageError{fmt.Sprintf("--http %q: %v", *httpURL, err)}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("%s: %w", *httpURL, err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s: %s", *httpURL, resp.Status)
		}
		fmt.Fprintf(stdout, "%s: %s\n", *httpURL, resp.Status)
		return nil
	}
	conn, err := grpc.NewClient(*gnmiAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return usageError{fmt.Sprintf("--gnmi %q: %v", *gnmiAddr, err)}
	}
	defer conn.Close()
	caps, err := gnmi.NewGNMIClient(conn).Capabilities(ctx, &gnmi.CapabilityRequest{})
	if err != nil {
		return fmt.Errorf("gnmi %s: %w", *gnmiAddr, err)
	}
	fmt.Fprintf(stdout, "gnmi %s: gNMI %s, %d models\n", *gnmiAddr, caps.GetGNMIVersion(), len(caps.GetSupportedModels()))
	return nil
}
