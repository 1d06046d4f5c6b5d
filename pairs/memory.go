package pairs

// heldPerFileByte is what evaluating a translation model on a pairs file
// takes per byte of the file when every line is kept (the kept pairs,
// their encoding, the garbage collector's slack): measured, peak RSS of
// gptg eval less that of gptg version, 33 bytes per byte of
// builtin:bible-en-es (2.3 MB, 76 MiB, with a model of 336k parameters),
// 27 of 2.3 MB of three-word pairs (3,216 parameters), 26 of 9.2 MB, 23
// of 23 MB. The reader's own bound (pairCost × heldPeak) asks 32 bytes
// per byte of such short pairs: with as many here, a file the check lets
// through is not refused by the reader halfway under the same limit.
const heldPerFileByte = 32

// HeldBytes is at most what a command that reads a pairs file of size
// bytes holds of it at its peak, so that it can count the pairs before it
// reads a byte: heldPerFileByte, or, for a file that large, what the
// reader takes at most before it refuses the file (MaxHeldBytes of kept
// pairs and the slack heldPeak measured with it). Lines the length filter
// leaves out hold nothing, so a file of long lines takes less.
func HeldBytes(size int64) float64 {
	return min(heldPerFileByte*float64(size), heldPeak*MaxHeldBytes)
}
