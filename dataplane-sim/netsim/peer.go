package netsim

// Dst returns the node of the QP's receiver (the destination of its data
// packets): a Fast CNP receiver finds the QP a switch names by the
// original destination address and the receiver's QP number.
func (q *QP) Dst() NodeID { return q.dst }
