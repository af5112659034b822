package plan

import "github.com/ktune/ktune/internal/abi"

// Dims is what the point's buffers and scalars are sized and valued from
// (abi.Dims): its shape and SPLITS, its io (the ABI's when it declares
// none), workspace, scratch, page size, host-planned arrays and the SM
// count its expressions read (Point.SMs). The plan's
// checks (tensor maps, planned arrays) and the probe's buffers read a
// point through it.
func (pt *Point) Dims() abi.Dims {
	c := &pt.Config
	return abi.Dims{Shape: c.Shape, Splits: c.Splits, IO: pt.IO.OrABI(), WorkspaceBytes: pt.WorkspaceBytes,
		Scratch: pt.Scratch, PageSize: pt.PageSize, Planned: pt.PlannedBufs, SMs: pt.SMs}
}
