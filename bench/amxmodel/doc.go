// Package amxmodel holds, in its tests only, a plain-Go model of the
// arithmetic of Intel AMX's TDPBF16PS on Sapphire Rapids, and checks it
// bit for bit against sums the hardware computed (testdata/golden.txt,
// made by bench/amx-numerics.sh golden from bench/amx/amxnum.c). It is
// the twin an AMX bfloat16 kernel would need; see bench/NOTES.md, "AMX
// TDPBF16PS numerics".
package amxmodel
