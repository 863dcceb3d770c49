package wire

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOpcodeIsData: the opcodes that carry RDMA data, which the network
// model's flow counters and lhcnp's ECN marking rate count, and those
// that do not.
func TestOpcodeIsData(t *testing.T) {
	for _, tt := range []struct {
		desc string
		ops  []Opcode
		want bool
	}{
		{"RC send and write", []Opcode{OpRCSendFirst, OpRCSendMiddle, OpRCSendLast, OpRCSendOnly, OpRCSendOnlyImm,
			OpRCWriteFirst, OpRCWriteMiddle, OpRCWriteLast, OpRCWriteOnly, OpRCWriteOnlyImm, OpRCSendLastInv, OpRCSendOnlyInv}, true},
		{"UC send and write", []Opcode{OpUCSendFirst, OpUCSendOnly, OpUCSendOnlyImm, OpUCWriteFirst, OpUCWriteOnlyImm}, true},
		{"UD send", []Opcode{OpUDSendOnly, OpUDSendOnlyImm}, true},
		{"RC read, responses, ACKs, atomics and flush", []Opcode{OpRCReadRequest, OpRCReadResponseFirst, OpRCReadResponseOnly,
			OpRCAck, OpRCAtomicAck, OpRCCompareSwap, OpRCFetchAdd, OpRCFlush, OpRCAtomicWrite}, false},
		{"CNP and vendor opcodes", []Opcode{OpCNP, OpRateAdviceDefault}, false},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			want, got := map[Opcode]bool{}, map[Opcode]bool{}
			for _, op := range tt.ops {
				want[op], got[op] = tt.want, op.IsData()
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("IsData (-want +got):\n%s", diff)
			}
		})
	}
}
