package graph

import (
	"fmt"
	"html"
	"strings"

	G "gorgonia.org/gorgonia"
)

// Dot writes an expression graph as Graphviz DOT that is the same bytes
// for the same graph: every node is named after its id (n1f is the node
// Gorgonia's names call %1f) and written in id order, every edge in the
// order of its op's arguments. Gorgonia's own ToDot names nodes by their
// memory addresses and orders them by those names, so two runs of one
// config — and two configs — could not be compared with diff.
//
// The first forward nodes (in the graph's order of creation) are the
// forward graph; any after them are the nodes gorgonia.Grad added, drawn
// in a cluster of their own.
func Dot(g *G.ExprGraph, forward int) string {
	nodes := g.AllNodes() // in order of creation, which is id order
	var inputs, constants, fwd, bwd strings.Builder
	for i, n := range nodes {
		w := &fwd
		switch {
		case isConstant(n):
			w = &constants
		case n.Op() == nil: // parameters and data
			w = &inputs
		case i >= forward:
			w = &bwd
		}
		fmt.Fprintf(w, "\t\t%s [label=<%s>];\n", dotName(n), dotLabel(n, w == &inputs))
	}
	var b strings.Builder
	b.WriteString("digraph gptg {\n\trankdir=TB;\n\tnodesep=0.5;\n\tnode [shape=none, fontname=monospace];\n")
	cluster := func(name, label string, body *strings.Builder) {
		if body.Len() > 0 {
			fmt.Fprintf(&b, "\tsubgraph cluster_%s {\n\t\tlabel=%q;\n%s\t}\n", name, label, body.String())
		}
	}
	// Parameters and inputs stay outside the clusters, each drawn beside
	// the op that reads it, shaded.
	b.WriteString(inputs.String())
	cluster("constants", "constants", &constants)
	cluster("forward", "forward", &fwd)
	cluster("backward", "backward (gorgonia.Grad)", &bwd)
	// Edges run from each argument to the op that reads it, labelled with
	// the argument's position.
	for _, n := range nodes {
		args := g.From(n.ID())
		for i := 0; args != nil && args.Next(); i++ {
			arg, ok := args.Node().(*G.Node)
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "\t%s -> %s [headlabel=\"%d\"];\n", dotName(arg), dotName(n), i)
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// dotName is a node's DOT name: n and its id in hexadecimal, as
// Gorgonia's node names refer to their arguments (%1f).
func dotName(n *G.Node) string { return fmt.Sprintf("n%x", n.ID()) }

// dotLabel is a node's HTML-like label: its id and name, its op, its type
// and its shape.
func dotLabel(n *G.Node, shaded bool) string {
	rows := [][2]string{{fmt.Sprintf("%x", n.ID()), n.Name()}}
	if op := n.Op(); op != nil && !isConstant(n) {
		rows = append(rows, [2]string{"op", op.String()})
	}
	rows = append(rows, [2]string{"type", fmt.Sprint(n.Type())}, [2]string{"shape", fmt.Sprint(n.Shape())})
	var b strings.Builder
	b.WriteString(`<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0"`)
	if shaded {
		b.WriteString(` BGCOLOR="lightyellow"`)
	}
	b.WriteString(">")
	for _, r := range rows {
		fmt.Fprintf(&b, "<TR><TD>%s</TD><TD>%s</TD></TR>", html.EscapeString(r[0]), html.EscapeString(r[1]))
	}
	b.WriteString("</TABLE>")
	return b.String()
}

// isConstant reports whether n is a constant: Gorgonia's constant ops are
// unexported, and the only ops that carry their value.
func isConstant(n *G.Node) bool {
	_, ok := n.Op().(interface{ Value() G.Value })
	return ok
}
