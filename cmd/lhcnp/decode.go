package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/lhcnp/lhcnp/dataplane-sim/wire"
	"github.com/lhcnp/lhcnp/dataplane-sim/wire/describe"
	"github.com/lhcnp/lhcnp/internal/cliconf"
)

// runDecode implements `lhcnp decode FILE.pcap [--json]`: one line (or JSON
// object) per frame with the format, every field and the status of every
// checksum and ICRC. A frame that does not parse is reported with the
// reason and decoding goes on; a file that cannot be read (missing too) is
// an error of the work, exit status 1: the capture is the command's data,
// not its configuration (docs/wire.md, "pcap").
func runDecode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("decode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "one JSON object per frame instead of a text line")
	legacy := fs.Bool("legacy", false, "read as a legacy RNIC: every opcode-0x81 frame is a standard CNP, the ICMPv6 type unknown")
	noICRC := fs.Bool("no-icrc", false, "do not verify RoCEv2 ICRCs")
	noChecksums := fs.Bool("no-checksums", false, "do not verify IPv4, UDP, ICMPv6 and extension checksums")
	cp := wire.DefaultCodePoints()
	icmpType := fs.Uint("icmpv6-type", uint(cp.LongHaulICMPv6Type), "ICMPv6 type of Long-haul CNP")
	classNum := fs.Uint("class-num", uint(cp.LongHaulClassNum), "RFC 4884 Class-Num of Long-haul CNP extension objects")
	fastOpt := fs.Uint("fastcnp-opt", uint(cp.FastCNPOptType), "IPv6 destination option type of Fast CNP")
	fastIOAM := fs.Uint("fastcnp-ioam-opt", uint(cp.FastCNPIOAMOptType), "IPv6 destination option type of Fast CNP with IOAM")
	fcnPort := fs.Uint("fcn-port", uint(cp.FCNPort), "UDP destination port of FCN messages")
	raOp := fs.Uint("rate-advice-opcode", uint(cp.RateAdviceOpcode), "BTH opcode of SCONE Rate Advice")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lhcnp decode [flags] FILE.pcap")
		fs.PrintDefaults()
	}
	files, err := cliconf.ParseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		fs.Usage()
		return usageError{"want exactly one pcap file"}
	}
	for name, v := range map[string]uint{"icmpv6-type": *icmpType, "class-num": *classNum, "fastcnp-opt": *fastOpt,
		"fastcnp-ioam-opt": *fastIOAM, "rate-advice-opcode": *raOp} {
		if v > 255 {
			return usageError{fmt.Sprintf("--%s: %d: must be 0-255", name, v)}
		}
	}
	if *fcnPort > 65535 {
		return usageError{fmt.Sprintf("--fcn-port: %d: must be 0-65535", *fcnPort)}
	}
	dec := wire.Decoder{
		CodePoints: wire.CodePoints{
			LongHaulICMPv6Type: uint8(*icmpType), LongHaulClassNum: uint8(*classNum),
			FastCNPOptType: uint8(*fastOpt), FastCNPIOAMOptType: uint8(*fastIOAM),
			FCNPort: uint16(*fcnPort), RateAdviceOpcode: wire.Opcode(*raOp),
		},
		Legacy: *legacy, SkipICRC: *noICRC, SkipChecksums: *noChecksums,
	}
	path := files[0]
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	// Said once, not "DIR: pcap: file header: read DIR: is a directory".
	if st, err := file.Stat(); err == nil && st.IsDir() {
		return fmt.Errorf("%s: is a directory", path)
	}
	r, err := wire.NewPcapReader(file)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if lt := r.LinkType(); lt != 1 {
		return fmt.Errorf("%s: link type %d, want 1 (Ethernet)", path, lt)
	}
	write := describe.WriteText
	if *asJSON {
		write = describe.WriteJSON
	}
	var f wire.Frame
	n, bad := 0, 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		frame, ts, origLen, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: after frame %d: %w", path, n, err)
		}
		n++
		derr := dec.Decode(frame, &f)
		if derr == nil && origLen > len(frame) {
			derr = fmt.Errorf("captured %d of %d bytes", len(frame), origLen)
		}
		if derr != nil {
			bad++
		}
		fields := describe.Fields(&f)
		if err := write(stdout, n, ts.UTC().Format("2006-01-02T15:04:05.000000000Z"), fields, derr); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "%s: %d frames, %s\n", path, n, plural(bad, "with an error", "with errors"))
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
