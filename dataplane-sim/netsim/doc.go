// Package netsim models a RoCEv2 network on the engine: links (rate,
// propagation delay, serialisation), switch ports (eight strict-priority
// egress queues with byte accounting against a buffer, RED-style ECN marking
// between K_min and K_max up to P_max, tail drop, PFC XOFF/XON per priority
// towards the upstream port), static routing, and RNICs whose queue pairs run
// DCQCN: the sender is a reaction point (alpha, rate cut, fast recovery,
// additive and hyper increase, timer and byte counter, NVIDIA defaults, every
// parameter configurable), the receiver a notification point (at most one CNP
// per QP per interval for CE-marked packets) that also sends ACKs.
//
// Data packets, ACKs and CNPs carry a real BTH encoded by package wire in
// Packet.Hdr, and the models read opcode, destination QP, PSN, AckReq and
// BECN back from those bytes. Payload bytes do not exist; sizes do.
// Control packets whose bytes matter on the path carry their whole frame
// (Packet.Frame, pooled): the IB CM MADs with which every flow connects
// (REQ, REP, RTU; DREQ, DREP after a finite flow), encoded by
// wire.Encoder.CM, and the Long-haul CNPs of the next layer.
//
// # Building and running
//
//	sim := engine.New(engine.WithSeed(1))
//	n := netsim.New(sim)
//	sw, _ := n.AddSwitch("n1", addr, netsim.SwitchConfig{Port: portCfg})
//	a, _ := n.AddHost("a", addrA, netsim.DefaultHostConfig())
//	b, _ := n.AddHost("b", addrB, netsim.DefaultHostConfig())
//	n.Connect(a, sw, netsim.LinkConfig{RateBitsPerSec: 100e9, Delay: engine.Microsecond})
//	n.Connect(sw, b, netsim.LinkConfig{RateBitsPerSec: 100e9, Delay: 5 * engine.Millisecond})
//	n.ComputeRoutes()
//	f, _ := n.AddFlow(netsim.FlowConfig{Src: a, Dst: b})
//	sim.Every(0, 10*engine.Microsecond, func(now engine.Time) { sample(n) })
//	sim.Run(100 * engine.Millisecond)
//
// State is read directly on the engine goroutine (Port.QueueBytes,
// QP.RateBitsPerSec, ...) or copied with Network.Snapshot.
//
// # Hooks for the Long-haul CNP layer
//
// PortObserver sees every enqueue, dequeue, mark and drop at a switch egress
// (flow learning from data and CM frames, QD/EMR/QGR monitors, triggers);
// LinkObserver hears rate and delay changes (Link.AddObserver); Port.SetECN
// changes K_min and K_max per queue (BDP-adaptive K_max); Switch.Send
// originates packets (Long-haul CNPs, whole frames in Packet.Frame);
// ControlHandler on a Host receives CNPs and unknown control packets first
// (the Long-haul CNP reaction point) and acts through QP.SetRate,
// QP.SetCeiling (a cut DCQCN cannot undo), QP.PauseUntil and QP.ApplyCNP,
// after QP.Active; QP.AdminStop, FlowConfig.MaxRateBitsPerSec and the exact
// PortStats.PFCPausedNs serve the scenario runner. A Switch runs one
// Forwarder per ForwardStage, in stage order, on every packet between the
// route lookup and the egress queue: StageFilter may drop it (Fast CNP's
// border filtering; counted in SwitchStats.FilterDrops), then
// StageRewrite may rewrite it (FCN's ingress PE encapsulates there: the
// data packet then carries the head of its tunnelled frame,
// wire.EncapHead). A switch ends a tunnel addressed to it (the outer
// header off, SizeBytes 40 less, the ECN by RFC 6040), and marking CE
// marks the outermost IP header of a packet's frame.
//
// # Cables to other processes
//
// A Wire (Link.SetWire) carries what a port transmits to a process that
// runs the node at the other end (package udpwire); what comes back enters
// with Link.Arrive at its send time plus the link's delay. Link.SetUp takes
// a cable down and up (a neighbour gone): queued and in-flight packets are
// lost and counted (PortStats.DownDropPackets). FlowConfig.Dormant keeps
// the queue pairs of a flow whose sender runs elsewhere.
//
// # Partitions
//
// NewPartitioned puts the network on an engine.Group: SetPartition places
// each node (before it is connected) in a partition, whose Sim its ports,
// links and queue pairs schedule on and whose packet pool they use. A link
// between two partitions is cut (Link.Cut): its transmitter hands each
// packet to the receiving partition as a message for its arrival time, and
// its delay is what the group's lookahead (Lookahead) is made of. A
// network of one partition is exactly a network on one Sim.
//
// What is not modelled: loss recovery (drops are counted by the receiver as
// PSN gaps, never retransmitted; of the CM MADs only a REQ is sent again,
// after its response timeout), PFC pause quanta (a pause lasts until the
// resume), shared switch buffers (each port has its own), ECMP.
//
// The package depends on engine, wire and the standard library. It must not
// import gNMI, YANG or generated code.
package netsim
