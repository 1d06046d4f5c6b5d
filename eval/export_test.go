package eval

// PerPrefix exposes the prefix-only loss by its definition (one graph per
// prefix length) to the tests, which hold the cheaper passes against it.
var PerPrefix = perPrefix
